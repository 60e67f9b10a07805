"""The library's TPE (nas/searchers/tpe.py) in a Study, its Parzen estimators against Optuna's rules, the fine
grids of searchers that take continuous values, and the one warning of a study that grids its ranges
(spaces/params.py, nas/host/study_space.py). The contract (loop equals scan, no repeats) runs for every
registered searcher in tests/test_searchers.py."""

import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import nas
from nas.host.study_space import CONTINUOUS_SEARCHERS, make_space
from nas.searchers import available_searchers, searcher_class
from nas.searchers.tpe import bandwidths, default_gamma, mixture_weights
from spaces.continuous_space import ContinuousSpace
from spaces.params import FINE_POINTS, Float, Int, declared_space

SPACE = {
    "lr": Float(1e-5, 1e-1, log=True),
    "layers": Int(1, 8),
    "width": Int(16, 1024, log=True),
    "opt": ["sgd", "adam"],
    "momentum": Float(0.0, 0.99, when={"opt": ["sgd"]}),
}


def loss(trial):
    p = trial.params
    return ((math.log10(p["lr"]) + 3) ** 2 + 0.1 * abs(p["layers"] - 4) + 0.1 * abs(math.log2(p["width"]) - 7)
            + (0.5 if p["opt"] == "sgd" else 0.0))  # fmt: skip


# -- Optuna's rules, written out in numpy (optuna/samplers/_tpe/parzen_estimator.py, sampler.py) -----------------
def optuna_sigmas(mus, low, high):
    """Univariate bandwidths with the prior, consider_endpoints=False and the magic clip."""
    prior = 0.5 * (low + high)
    with_prior = np.append(mus, prior)
    order = np.argsort(with_prior, kind="stable")
    s = np.concatenate([[low], with_prior[order], [high]])
    sig = np.maximum(s[1:-1] - s[:-2], s[2:] - s[1:-1])
    if s.shape[0] >= 4:
        sig[0], sig[-1] = s[2] - s[1], s[-2] - s[-3]
    sig = sig[np.argsort(order)][: len(mus)]
    n_kernels = len(mus) + 1
    return np.append(np.clip(sig, (high - low) / min(100.0, 1.0 + n_kernels), high - low), high - low)


def optuna_weights(n):
    return np.ones(n) if n < 25 else np.concatenate([np.linspace(1.0 / n, 1.0, num=n - 25), np.ones(25)])


def test_bandwidths_and_weights_are_optunas():
    rng = np.random.default_rng(0)
    for n in (1, 2, 3, 7, 30):
        mus = rng.uniform(0, 1, n)
        pad = np.append(mus, rng.uniform(0, 1, 5))  # rows past the masked ones are ignored
        mask = np.arange(n + 5) < n
        got = np.asarray(bandwidths(jnp.asarray(pad, jnp.float32), jnp.asarray(mask), -0.01, 1.01, True))
        want = optuna_sigmas(mus, -0.01, 1.01)
        np.testing.assert_allclose(got[np.append(mask, True)], want, rtol=1e-5)
    for n in (3, 24, 25, 26, 40):
        mask = jnp.asarray(np.arange(60) < n)
        got = np.exp(np.asarray(mixture_weights(mask, 1.0)))
        w = np.append(optuna_weights(n), 1.0)
        np.testing.assert_allclose(got[np.append(np.asarray(mask), True)], w / w.sum(), rtol=1e-5)
    assert [int(default_gamma(n, 0.1, 25)) for n in (1, 10, 11, 100, 400)] == [1, 1, 2, 10, 25]


# -- fine grids -----------------------------------------------------------------------------------------------------
def test_searchers_that_take_continuous_values_get_fine_grids():
    assert CONTINUOUS_SEARCHERS == tuple(
        n for n in available_searchers(None) if getattr(searcher_class(n), "continuous_values", False)
    )
    space = make_space(SPACE, searcher="tpe")
    assert isinstance(space, ContinuousSpace) and space is make_space(dict(SPACE), searcher="random_search")
    assert space.cardinalities == (FINE_POINTS, 8, 1009, 2, FINE_POINTS)  # every integer of both Ints
    assert space.scales == ("log", "linear", "log", None, "linear")
    lr = space.hyperparameters[0].values
    assert (lr[0], lr[-1]) == (1e-5, 1e-1) and np.allclose(np.diff(np.log(lr)), np.log(1e4) / (FINE_POINTS - 1))
    assert space.to_spec(space.from_spec({"lr": 0.00123, "layers": 3, "width": 100, "opt": "adam"}))["lr"] == (
        pytest.approx(0.00123, rel=1e-5))  # fmt: skip
    with pytest.raises(ValueError, match=r"lr=0.5 is not a value of its range \[1e-05, 0.1\]"):
        space.from_spec({"lr": 0.5, "layers": 3, "width": 100, "opt": "adam"})
    # a num= keeps its grid; other searchers keep the default grids, bit for bit
    assert make_space({"x": Float(0, 1, num=5)}, searcher="tpe").cardinalities == (5,)
    assert make_space(SPACE, searcher="regularized_evolution", warn=False).cardinalities == (
        declared_space(SPACE).cardinalities)  # fmt: skip
    big = declared_space({"n": Int(1, 10**7, log=True), "k": Int(0, 3 * 10**6)}, continuous=True)
    assert big.cardinalities[0] <= 4096 and big.cardinalities[1] == FINE_POINTS


def test_a_gridded_study_says_so_once():
    with pytest.warns(UserWarning) as caught:
        study = nas.create_study(SPACE, "regularized_evolution", direction="minimize", seed=0, max_trials=4,
                                 population_size=2, tournament_size=2)  # fmt: skip
        study.optimize(loss, show_progress=False)
    grid = [w for w in caught if "on a grid" in str(w.message)]
    assert len(grid) == 1, [str(w.message) for w in grid]
    line = str(grid[0].message)
    assert "lr: Float(1e-05, 0.1, log=True) on 65 values (16 per decade)" in line
    assert "width: Int(16, 1024, log=True) on 33 of its 1009 values" in line
    assert "momentum: Float(0.0, 0.99) on 101 values" in line and "layers" not in line  # every integer kept
    assert "random_search, tpe and tpe_hyperband take ranges continuously" in line and "num=" in line
    assert grid[0].filename == __file__  # the user's line
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        nas.create_study(SPACE, "tpe", seed=0, max_trials=4)
        nas.create_study({"x": Float(0, 1, num=11), "n": Int(1, 8)}, "regularized_evolution", max_trials=4)


# -- TPE in a Study ---------------------------------------------------------------------------------------------------
def test_tpe_in_a_study_searches_continuous_values_and_beats_random():
    tpe = nas.create_study(SPACE, "tpe", direction="minimize", seed=0, max_trials=40)
    tpe.optimize(loss, show_progress=False)
    rnd = nas.create_study(SPACE, "random_search", direction="minimize", seed=0, max_trials=40)
    rnd.optimize(loss, show_progress=False)
    params = [t.params for t in tpe.trials]
    grid = set(declared_space(SPACE).hyperparameters[0].values)
    assert sum(p["lr"] not in grid for p in params) >= 35  # off the 65-value grid: continuous values
    assert all(isinstance(p["layers"], int) and 1 <= p["layers"] <= 8 for p in params)
    assert all(("momentum" in p) == (p["opt"] == "sgd") for p in params)  # conditions hold
    keys = [tuple(sorted(p.items())) for p in params]
    assert len(set(keys)) == len(keys)  # never re-queried
    tail = np.mean([t.value for t in tpe.trials[20:]])
    assert tail < np.mean([t.value for t in rnd.trials[20:]]) and tpe.best_value < 0.2


def test_tpe_with_a_pruner_and_batches():
    def curve(trial):
        final = loss(trial)
        for step in range(1, 10):
            trial.report(final + 1.0 / step, step)
            if trial.should_prune():
                return final + 1.0 / step
        return final

    study = nas.create_study(SPACE, "tpe", direction="minimize", seed=1, max_trials=24, pruner="asha",
                             fidelities=[1, 3, 9], batch_size=4, n_startup_trials=8)  # fmt: skip
    study.optimize(curve, show_progress=False)
    states = [t.state for t in study.trials]
    assert len(states) == 24 and "pruned" in states and "complete" in states


def test_tpe_study_file_replays(tmp_path):
    path = str(tmp_path / "tpe.jsonl")
    study = nas.create_study(SPACE, "tpe", direction="minimize", seed=3, max_trials=14, storage=path)
    study.optimize(loss, n_trials=12, show_progress=False)
    study.close()
    again = nas.load_study(path)
    assert [t.params for t in again.trials] == [t.params for t in study.trials]
    again.optimize(loss, show_progress=False)
    whole = nas.create_study(SPACE, "tpe", direction="minimize", seed=3, max_trials=14)
    whole.optimize(loss, show_progress=False)
    assert [t.params for t in again.trials] == [t.params for t in whole.trials]


def test_tpe_runs_in_the_compiled_loop_on_a_declared_space():
    from nas.engine.runner import make_search

    space = declared_space({"x": Float(-2.0, 2.0), "c": ["a", "b", "c"]}, continuous=True)

    class Quadratic:  # a benchmark of one function: the runner calls query(key, tokens[B, N])
        def query(self, key, tokens):
            x = jnp.asarray(space.numeric_table())[0][tokens[:, 0]]
            v = -(x - 0.7) ** 2 - 0.1 * tokens[:, 1]
            return {"valid": v, "test": v, "cost": jnp.zeros_like(v)}

    searcher = nas.make_searcher("tpe", space, max_queries=40)
    hist = jax.jit(make_search(searcher), static_argnums=1)(jax.random.PRNGKey(0), Quadratic())
    assert float(np.max(hist.score)) > -0.01


def test_tpe_hyperband_in_a_multi_fidelity_study():
    def train(trial):
        return loss(trial) + 1.0 / trial.budget  # a longer training is better

    study = nas.create_study(SPACE, "tpe_hyperband", direction="minimize", seed=0, fidelities=[1, 3, 9],
                             max_resource=12 * 9, n_startup_trials=4)  # fmt: skip
    assert isinstance(study.space, ContinuousSpace)
    study.optimize(train, show_progress=False)
    done = [t for t in study.trials if t.state == "complete"]
    assert {t.budget for t in done} == {1, 3, 9}
    starts = [tuple(sorted(t.params.items())) for t in study.trials if t.budget == 1]
    assert len(set(starts)) == len(starts)  # every configuration started once
    assert study.best_value < 1.0


# a random-search study on declared ranges, journaled by nasjax before ranges could be continuous (587e4ff)
GRIDDED_JOURNAL = """\
{"event":"study","kind":"single","version":2,"settings":{"space":{"lr":{"type":"float","low":0.0001,"high":0.1,"log":true,"step":null,"num":null,"when":null},"width":{"type":"int","low":8,"high":256,"log":false,"step":null,"num":null,"when":null},"act":["relu","tanh"]},"searcher":"random_search","direction":"minimize","seed":0,"directions":null,"max_queries":10,"pruner":null,"pruned":"last_value","directory":null}}
{"event":"ask","number":0,"tokens":[14,74,1],"start":"2026-12-02T01:17:40.377288"}
{"event":"tell","number":0,"state":"complete","value":0.000749894,"cost":null,"complete":"2026-12-02T01:17:40.378060"}
{"event":"ask","number":1,"tokens":[11,86,0],"start":"2026-12-02T01:17:40.478091"}
{"event":"tell","number":1,"state":"complete","value":0.000486968,"cost":null,"complete":"2026-12-02T01:17:40.481596"}
{"event":"ask","number":2,"tokens":[28,99,1],"start":"2026-12-02T01:17:40.488084"}
{"event":"tell","number":2,"state":"complete","value":0.00562341,"cost":null,"complete":"2026-12-02T01:17:40.493504"}
{"event":"ask","number":3,"tokens":[7,10,0],"start":"2026-12-02T01:17:40.498857"}
{"event":"tell","number":3,"state":"complete","value":0.000273842,"cost":null,"complete":"2026-12-02T01:17:40.501432"}
"""


def test_a_study_file_resumes_on_the_grid_it_started_on(tmp_path):
    """A study file records how its ranges are searched (``ranges``): one written before random search took
    ranges continuously replays its trials on the default grid and continues there, without a warning."""
    path = tmp_path / "old.jsonl"
    path.write_text(GRIDDED_JOURNAL)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        old = nas.load_study(str(path))
    assert old.ranges == "grid" and [t.params["width"] for t in old.trials] == [192, 221, 254, 33]
    assert old.trials[0].params["lr"] == 0.000749894  # a value of the 16-per-decade grid
    t = old.ask()
    old.tell(t, 1.0)
    old.close()
    assert nas.load_study(str(path)).trials[-1].params == t.params  # the continued file replays too
    new = nas.create_study(dict(SPACE), "random_search", max_trials=10, storage=str(tmp_path / "new.jsonl"))
    assert new.ranges == "continuous"
    new.tell(new.ask(), 1.0)
    new.close()
    assert nas.load_study(str(tmp_path / "new.jsonl")).ranges == "continuous"
    gridded = nas.create_study(dict(SPACE), "random_search", max_trials=10, ranges="grid")
    assert gridded.space.cardinalities != new.space.cardinalities
    with pytest.raises(ValueError, match="searches grids; give ranges='grid'"):
        nas.create_study(dict(SPACE), "regularized_evolution", max_trials=10, ranges="continuous")


def test_tpe_resumes_in_the_chunked_loop_bit_for_bit(tmp_path):
    """Interrupted after two chunks and resumed from its checkpoint, a TPE run ends with the history of an
    uninterrupted one (configs name Optuna's TPE ``tpe``, so tests/test_resume.py cannot reach this one)."""
    from nas.engine.chunked_loop import run_chunked
    from spaces.benchmarks.registry import make_benchmark

    bench = make_benchmark("hpolib/naval_propulsion")
    searcher = nas.make_searcher("tpe", bench.space, max_queries=30, n_startup_trials=5)
    keys = jax.random.split(jax.random.PRNGKey(3), 2)
    whole = run_chunked(searcher, bench, keys, chunk_steps=6, progress=False)
    ckpt = str(tmp_path / "tpe.npz")
    assert run_chunked(searcher, bench, keys, chunk_steps=6, ckpt_path=ckpt, progress=False, max_chunks=2) is None
    resumed = run_chunked(searcher, bench, keys, chunk_steps=6, ckpt_path=ckpt, progress=False)
    np.testing.assert_array_equal(np.asarray(whole.tokens), np.asarray(resumed.tokens))
    np.testing.assert_array_equal(np.asarray(whole.score), np.asarray(resumed.score))
