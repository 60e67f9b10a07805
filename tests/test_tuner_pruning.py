"""Pruning in place (nas/host/pruning.py): ASHA's stopping rule and Hyperband's brackets on hand-made reports,
each decision worked out by hand in the comments, and a Study whose objective reports and is pruned."""

import math

import numpy as np
import pytest

from nas.host.pruning import ASHAPruner, HyperbandPruner, make_pruner
from nas.host.study import Study
from nas.host.trials import TrialPruned

NAN = float("nan")


def test_asha_stops_a_trial_outside_the_top_third_of_its_rung():
    p = ASHAPruner((1, 3, 9, 27), eta=3)  # rungs at 1, 3, 9 (none at the top, 27)
    np.testing.assert_array_equal(p.rung_budgets(0), [1, 3, 9])
    # (trial, step, score, stops?): a rung's values so far n (itself included), q = max(1, floor(n / 3)),
    # better = values above its own; it stops when better >= q
    script = [
        (0, 1, 0.50, False),  # rung 1: n=1 q=1 better=0
        (1, 1, 0.40, True),  # n=2 q=1 better=1 (0.5)
        (2, 1, 0.60, False),  # n=3 q=1 better=0
        (3, 1, 0.55, True),  # n=4 q=1 better=1 (0.6)
        (4, 1, 0.58, True),  # n=5 q=1 better=1
        (5, 1, 0.70, False),  # n=6 q=2 better=0
        (6, 1, 0.59, True),  # n=7 q=2 better=2 (0.6, 0.7)
        (7, 1, 0.65, False),  # n=8 q=2 better=1 (0.7)
        (0, 2, 0.52, False),  # no rung between 1 and 2
        (0, 3, 0.80, False),  # rung 3: n=1
        (2, 5, 0.70, True),  # rung 3: n=2 q=1 better=1 (0.8)
        (8, 9, 0.90, False),  # first report at 9: rung 1 (n=9 q=3 better=0), 3 (n=3 q=1 better=0), 9 (n=1)
        (9, 3, 0.30, True),  # rung 1: n=10 q=3 better=9: fails there, so nothing is recorded at rung 3
        (10, 1, NAN, True),  # not a number: stopped, recorded nowhere
        (8, 27, 0.10, False),  # the top budget: no decision
    ]
    for trial, step, score, stops in script:
        assert p.report(trial, step, -math.inf if math.isnan(score) else score) == stops, (trial, step)
    has = np.asarray(p.rungs.has)
    assert np.nonzero(has[0])[0].tolist() == list(range(10))  # trial 1, 3, ... recorded where they failed
    assert np.nonzero(has[1])[0].tolist() == [0, 2, 8] and np.nonzero(has[2])[0].tolist() == [8]
    assert float(p.rungs.value[1, 2]) == pytest.approx(0.70) and float(p.rungs.value[0, 8]) == pytest.approx(0.9)
    p.report(40, 1, 0.99)  # a trial number past the arrays' 16 columns: they grow (to 64), nothing is lost
    assert p.rungs.group.shape == (64,) and np.nonzero(np.asarray(p.rungs.has)[0])[0].tolist()[-1] == 40


def test_hyperband_assigns_brackets_and_compares_within_them():
    p = HyperbandPruner((1, 3, 9), eta=3)
    # brackets s = 2, 1, 0 start n_0 = 9, 5, 3 configurations: trials 0-8, 9-13, 14-16, then again
    assert p.starts == [9, 5, 3]
    assert [p.group(i) for i in (0, 8, 9, 13, 14, 16, 17)] == [0, 0, 1, 1, 2, 2, 0]
    np.testing.assert_array_equal(p.rung_budgets(0), [1, 3])  # bracket s=2: rungs 1, 3, (9)
    np.testing.assert_array_equal(p.rung_budgets(9), [np.inf, 3])  # s=1: rungs 3, (9)
    np.testing.assert_array_equal(p.rung_budgets(14), [np.inf, np.inf])  # s=0: full trainings only
    script = [
        (0, 1, 0.5, False),  # bracket 0, rung 1: n=1
        (9, 1, 0.1, False),  # bracket 1 has no rung at 1
        (9, 3, 0.2, False),  # bracket 1, rung 3: n=1
        (1, 3, 0.4, True),  # bracket 0: passes rung 1 (n=2 q=1 better=1: fails there) and rung 3 at once
        (10, 3, 0.15, True),  # bracket 1, rung 3: n=2 q=1 better=1 (trial 9)
        (0, 3, 0.6, False),  # bracket 0, rung 3: n=1 (trial 1 failed at rung 1; bracket 1's trial 9 not a rival)
        (14, 9, 0.0, False),  # bracket 2: no decisions
    ]
    for trial, step, score, stops in script:
        assert p.report(trial, step, score) == stops, (trial, step)
    assert make_pruner(p.spec(), None).starts == [9, 5, 3]  # a journal rebuilds it from its spec
    # the rungs are the asha searcher's: its ladder on every offered step (ideal budgets 1, 3, 9 of 27)
    np.testing.assert_array_equal(ASHAPruner(range(1, 28)).rung_budgets(0), [1, 3, 9])
    with pytest.raises(ValueError, match="needs fidelities"):
        make_pruner("asha", None)


def test_a_study_prunes_trainings_where_they_run():
    # learning curves: configuration x reaches 1 - x / 10 at step 27 along value = final * (1 - 0.5 ** step)
    space = {"x": list(range(10)), "y": [0, 1]}

    def objective(trial):
        final = 1.0 - trial.params["x"] / 10 + 0.01 * trial.params["y"]
        for step in range(1, 28):
            trial.report(final * (1 - 0.5**step), step)
            if trial.should_prune():
                if trial.number % 2:
                    raise TrialPruned()
                return final * (1 - 0.5**step)  # returning after the decision: recorded as pruned too
        return final

    study = Study(space, "random_search", direction="maximize", seed=0, max_trials=12, pruner="asha",
                  fidelities=[1, 3, 9, 27])  # fmt: skip
    study.optimize(objective)
    states = [t.state for t in study.trials]
    assert states[0] == "complete" and "pruned" in states and set(states) <= {"complete", "pruned"}
    for t in study.trials:
        steps = max(t.intermediate_values)
        assert (steps == 27) == (t.state == "complete"), t
        if t.state == "pruned":
            assert steps in (1, 3, 9) and t.value == pytest.approx(t.intermediate_values[steps])
            assert study.should_prune(t.number)
    best = max((t for t in study.trials if t.state == "complete"), key=lambda t: t.value)
    assert study.best_trial is best and best.value == max(1.0 - p["x"] / 10 + 0.01 * p["y"]
                                                          for p in (t.params for t in study.trials))  # fmt: skip
    # the searcher saw each pruned trial's last value (pruned="last_value"); the journal of events held them
    with pytest.raises(ValueError, match="is pruned; report while it runs"):
        study.report(next(t for t in study.trials if t.state == "pruned"), 30, 1.0)
