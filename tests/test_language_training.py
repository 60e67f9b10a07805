"""Real training of compiled language networks (optax) and host-side searches over them.

Small real runs with asserted thresholds: a fixed digits CNN learns (chance is 0.1), a diabetes
MLP beats the mean predictor (MSE 1 on the standardised target), a vmapped group equals its
members trained one at a time, results are deterministic and memoized, invalid strings score
``-inf``; searchers drive the trainer through ``nas.host.study.Study`` without repeating a query.
"""

import functools

import jax
import numpy as np
import pytest

from nas.host.task_search import incumbent_curves, run_task_search
from spaces.language import D, LanguageSpace
from spaces.language import flax_modules as fm
from spaces.language.datasets import load
from spaces.language.flatten import FlatLanguageSpace
from spaces.language.library import siso_repeat, siso_sequential
from spaces.language.tasks import LanguageTask, make_task
from spaces.language.training import TrainConfig, Trainer

pytest.importorskip("sklearn", reason="the digits and diabetes tasks need scikit-learn (pip install scikit-learn)")


@functools.cache
def task(name, **train):
    return make_task(name, **train)


def tiny_mlp():
    """1 or 2 layers of 8 units with a traced activation and dropout: 90 architectures, 2 programs."""

    def layer():
        return siso_sequential(
            [fm.dense(D([8])), fm.activation(D(["relu", "tanh", "identity"])), fm.dropout(D([0.0, 0.1, 0.3]))]
        )

    return siso_repeat(layer, D([1, 2]))


@functools.cache
def tiny_task():
    space = FlatLanguageSpace(LanguageSpace(tiny_mlp, "tiny_mlp"))
    data = load("diabetes")
    cfg = TrainConfig(epochs=10, batch_size=32, max_group=4, min_group=4)
    return LanguageTask("tiny_mlp", space, data, Trainer(space, data, cfg), report_kind="neg_log_mse")


# values in traversal order (Algorithm 2 visits the space from its output): dropout 0, max pool,
# one block, relu, 16 filters, 3x3 kernel
DIGITS_ARCH = [0.0, 1, 1, "relu", 16, 3]


@pytest.mark.slow
def test_a_digits_cnn_learns():
    t = task("digits_cnn", epochs=4)
    tokens = t.space.from_spec(DIGITS_ARCH)[None]
    r = t.evaluate(tokens, [0])
    assert r["valid"][0] > 0.8 and r["test"][0] > 0.8, r  # 10 classes: chance is 0.1
    assert r["params"][0] == 16 * 9 + 16 + 4 * 4 * 16 * 10 + 10
    again = t.evaluate(tokens, [0])  # memoized: same numbers, no training
    assert again["valid"][0] == r["valid"][0] and t.trainer.stats["memo_hits"] >= 1


@pytest.mark.slow
def test_a_diabetes_mlp_beats_the_mean_predictor():
    t = task("diabetes_mlp", epochs=30)
    tokens = t.space.from_spec([1, 0.0, "relu", 64])[None]
    r = t.evaluate(tokens, [0])
    # -log MSE on the standardised target; predicting the training mean gives MSE about 1 (score 0)
    assert r["valid"][0] > 0.3 and r["test"][0] > 0.3, r
    assert r["params"][0] == 10 * 64 + 64 + 64 + 1
    assert t.report(r["test"])[0] < 0.75  # reported as MSE


@pytest.mark.slow
def test_a_vmapped_group_equals_one_at_a_time():
    """Two networks that differ only in traced hyperparameters (activation, dropout rate) share one
    program; vmapped together they give what each gives alone."""
    t = task("diabetes_mlp", epochs=5)
    a = t.space.from_spec([2, 0.0, "tanh", 16, 0.1, "relu", 16])
    b = t.space.from_spec([2, 0.3, "identity", 16, 0.0, "tanh", 16])
    pa, pb = t.trainer.plan_of_tokens(a), t.trainer.plan_of_tokens(b)
    assert pa.signature == pb.signature
    together = Trainer(t.space, t.data, t.trainer.cfg)
    both = together.evaluate(np.stack([a, b]), np.asarray([3, 3]))
    assert together.stats["programs_compiled"] == 1 and together.stats["trained"] == 2
    alone = Trainer(t.space, t.data, t.trainer.cfg)
    one = [alone.evaluate(x[None], np.asarray([3])) for x in (a, b)]
    np.testing.assert_allclose(both["valid"], [o["valid"][0] for o in one], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(both["test"], [o["test"][0] for o in one], rtol=1e-4, atol=1e-5)
    assert both["valid"][0] != both["valid"][1]


def test_invalid_strings_score_minus_inf_without_raising():
    t = task("diabetes_mlp", epochs=5)
    bad = np.full((1, t.space.num_tokens), 99, np.int32)
    r = t.evaluate(bad, [0])
    assert r["valid"][0] == -np.inf and r["test"][0] == -np.inf


def test_unknown_task_and_training_option_fail_clearly():
    with pytest.raises(ValueError, match="unknown language task 'digit_cnn'.*digits_cnn"):
        make_task("digit_cnn")
    with pytest.raises(ValueError, match="unknown training option.*epoch"):
        make_task("diabetes_mlp", epoch=3)


@pytest.mark.slow
@pytest.mark.parametrize(
    "searcher, options",
    [
        ("mcts", {"exploration": 0.33}),
        ("regularized_evolution", {"population_size": 100, "tournament_size": 25, "num_init": 4}),
    ],
)
def test_searchers_drive_real_training_through_the_study(searcher, options):
    t = tiny_task()
    run = run_task_search(t.evaluate, t.space, searcher, seed=0, max_queries=10, batch_size=4, **options)
    assert run["tokens"].shape == (10, t.space.num_tokens) and run["valid"].shape == (10,)
    ids = np.asarray(jax.vmap(t.space.string_id)(run["tokens"]))
    assert len(set(ids.tolist())) == 10, "an architecture was trained twice in one search"
    assert np.all(np.isfinite(run["valid"])) and np.max(run["valid"]) > 0.0  # some beat the mean predictor
    best, test_of_best = incumbent_curves(run["valid"], run["test"])
    assert np.all(np.diff(best) >= 0) and test_of_best[-1] == run["test"][np.argmax(run["valid"])]
    assert t.trainer.stats["programs_compiled"] <= 2  # one per signature (groups padded to 4 rows)


def test_cifar10_loader_is_optional_and_says_how_to_install():
    try:
        import tensorflow_datasets  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pip install tensorflow-datasets"):
            load("cifar10")
    else:
        pytest.skip("tensorflow-datasets is installed; the loader needs its prepared CIFAR-10 files (not tested)")
