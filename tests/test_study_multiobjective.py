"""A host Study with several objectives (``directions=[...]``, nas.host.objectives), as Optuna's."""

import itertools
import warnings

import jax
import numpy as np
import pytest

from nas.engine.runner import make_search
from nas.host.study import Study
from nas.searchers import make_searcher
from spaces.base import CategoricalSpace
from spaces.benchmarks.tabular import TabularBenchmark

SPACE = CategoricalSpace("mo_net", {"depth": [1, 2, 3, 4, 5, 6], "width": [8, 16, 32, 64, 128, 256]})
ROWS = {  # accuracy rises with size, latency with depth and width: a real trade-off, some ties
    (d, w): {"valid": float(90 - 12 / (1 + d + w) - (d * w) % 4), "latency": float(1 + d + 2 * w)}
    for d, w in itertools.product(range(6), range(6))
}
NSGA2 = {"population_size": 4}


def table():
    return TabularBenchmark.from_dict(name="mo/net", space=SPACE, table=ROWS, metrics=[("latency", "ms")])


def values(p):
    """What a user's objective returns: (error, latency), both to minimize."""
    row = ROWS[(SPACE.values["depth"].index(p["depth"]), SPACE.values["width"].index(p["width"]))]
    return 100.0 - row["valid"], row["latency"]


def front_by_hand(trials):
    done = [t for t in trials if t.state == "complete"]

    def dominates(o, t):
        return all(a <= b for a, b in zip(o.values, t.values)) and o.values != t.values

    return [t.number for t in done if not any(dominates(o, t) for o in done)]


def test_a_study_with_directions_proposes_the_compiled_runners_strings():
    """Told [-error, -latency] as the runner tells [valid, -latency]: the same strings, seed for seed (the told
    row is the same for every multi-objective searcher; each one's loop == scan is tests/test_searchers.py)."""
    name, options = "nsga2", NSGA2
    study = Study(SPACE, name, directions=["minimize", "minimize"], seed=5, max_trials=20, **options)
    study.optimize(lambda trial: values(trial.params))
    s = make_searcher(name, SPACE, max_queries=20, **options)
    hist = jax.jit(make_search(s, metrics=("latency",)))(jax.random.PRNGKey(5), table())
    np.testing.assert_array_equal(np.stack([t.tokens for t in study.trials]), np.asarray(hist.tokens))
    assert [t.values for t in study.trials] == [list(values(t.params)) for t in study.trials]
    assert [t.number for t in study.best_trials] == front_by_hand(study.trials)


def test_failed_values_errors_journal_and_dataframe(tmp_path):
    def objective(trial):
        p = trial.params
        if p["depth"] == 2:
            return None  # a failed evaluation
        if p["depth"] == 3:
            return [float("nan"), 1.0]  # recorded as failed, with a warning
        return list(values(p))

    path = str(tmp_path / "study.jsonl")
    study = Study(SPACE, "nsga2", directions=["minimize", "minimize"], seed=1, max_trials=20, storage=path, **NSGA2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        study.optimize(objective, n_trials=16)
    states = {t.number: t.state for t in study.trials}
    failed = [t for t in study.trials if t.params["depth"] in (2, 3)]
    assert failed and all(t.state == "failed" and t.values is None and t.value is None for t in failed)
    assert [t.number for t in study.best_trials] == front_by_hand(study.trials)
    assert not {t.number for t in study.best_trials} & {t.number for t in failed}
    with pytest.raises(RuntimeError, match="best_trials"):
        _ = study.best_trial
    trial = study.ask()
    with pytest.raises(TypeError, match="2 objectives"):
        study.tell(trial, 0.5)
    with pytest.raises(TypeError, match="2 objectives"):
        study.tell(trial, [0.5, 1.0, 2.0])
    with pytest.warns(UserWarning, match=r"\(0.5, inf\); recorded as a failed evaluation"):
        study.tell(trial, [0.5, float("inf")])  # the one rule of tell: an infinity is a failed evaluation
    assert trial.state == "failed" and trial.values is None
    study.tell(study.ask(), (0.5, 3.0))
    df = study.trials_dataframe()
    assert {"values_0", "values_1"} <= set(df.columns) and "value" not in df.columns
    assert df["values_1"].tolist()[-1] == 3.0 and np.isnan(df["values_0"][failed[0].number])
    study.close()

    again = Study.load(path)  # replays the journal through the same compiled ask/tell
    assert [t.values for t in again.trials] == [t.values for t in study.trials]
    assert {t.number: t.state for t in again.trials[:16]} == states
    assert again.directions == ("minimize", "minimize") and again.direction is None
    nxt, nxt_again = study.ask(), again.ask()  # both continue alike
    np.testing.assert_array_equal(nxt.tokens, nxt_again.tokens)
    again.close()


def test_directions_are_checked_in_one_line():
    cases = [
        (dict(searcher="nsga2", direction="minimize", directions=["minimize", "minimize"]), "not both"),
        (dict(searcher="nsga2", directions=["minimize", "up"]), "each must be"),
        (dict(searcher="nsga2", directions="minimize"), "non-empty list"),
        (dict(searcher="regularized_evolution", directions=["minimize", "maximize"]), "optimizes one objective"),
        (dict(searcher="nsga2"), "give directions"),
        (dict(searcher="nsga2", directions=["minimize"] * 2, num_objectives=3), "does not match"),
        (dict(searcher="nsga2", directions=["minimize"] * 2, pruner="asha", fidelities=[1, 3]), "no pruner"),
        (dict(searcher="mo_asha", directions=["minimize"] * 2, fidelities=[1, 3]), "multi-fidelity"),
    ]
    for kwargs, match in cases:
        with pytest.raises(ValueError, match=match) as e:
            Study(SPACE, max_trials=10, **kwargs)
        assert "\n" not in str(e.value)
    one = Study(SPACE, "random_search", directions=["maximize"], max_trials=10)  # one direction: Optuna's too
    assert one.direction == "maximize" and one.num_objectives == 1
