"""Every argument of ``Study``, ``ask``, ``tell``, ``report`` and ``load_study`` is checked with one clear line
naming it, before anything is built or changed (nas/host/study.py, study_base.py, trials.py)."""

import math

import pytest

from nas.host.study import Study, load_study
from tests.mf_tables import BUDGETS, SPACE

SMALL = {"a": [0, 1, 2, 3], "b": [0, 1, 2, 3, 4]}
MF = dict(searcher="asha", direction="maximize", seed=0, max_resource=4 * BUDGETS[-1])


def one_line(error, *words):
    text = str(error.value)
    assert "\n" not in text and all(w in text for w in words), text


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        (dict(fidelities="27"), TypeError, ("fidelities must be a list",)),
        (dict(fidelities=9), TypeError, ("fidelities must be a list",)),
        (dict(fidelities=[]), ValueError, ("fidelities must be positive",)),
        (dict(fidelities=[1, 0, 3]), ValueError, ("fidelities must be positive",)),
        (dict(fidelities=[1, math.nan]), ValueError, ("fidelities must be positive",)),
        (dict(fidelities=[1, "3"]), ValueError, ("fidelities must be positive",)),
        (dict(fidelities=[9, 3, 1]), ValueError, ("fidelities must increase",)),
        (dict(fidelities=BUDGETS, continues="no"), TypeError, ("continues must be True",)),
        (dict(fidelities=BUDGETS, continues=1), TypeError, ("continues must be True",)),
        (dict(fidelities=BUDGETS, workers=0), ValueError, ("workers must be a positive integer",)),
        (dict(fidelities=BUDGETS, workers=1.5), ValueError, ("workers must be a positive integer",)),
        (dict(fidelities=BUDGETS, max_resource=0), ValueError, ("max_resource must be a whole number",)),
        (dict(fidelities=BUDGETS, max_resource="4"), ValueError, ("max_resource must be a whole number",)),
        (dict(fidelities=BUDGETS, max_resource=2.5), ValueError, ("max_resource must be a whole number",)),
        (dict(searcher="random_search", max_resource=None, max_trials=2.5), ValueError, ("max_trials must be a",)),
        (dict(fidelities=BUDGETS, storage=3), TypeError, ("storage must be a file path",)),
        (dict(fidelities=BUDGETS, storage=""), ValueError, ("storage='' names no file",)),
        (dict(fidelities=BUDGETS, directory=3), TypeError, ("directory must be a folder path",)),
        (dict(searcher=3), TypeError, ("searcher must be a registered name",)),
    ],
)
def test_a_bad_study_argument_is_one_line_naming_it(tmp_path, kwargs, error, words):
    with pytest.raises(error) as e:
        Study(SPACE, **{**MF, **kwargs})
    one_line(e, *words)


def test_continues_and_workers_accept_what_they_mean():
    study = Study(SPACE, **MF, fidelities=list(BUDGETS), continues=False, workers=2)
    assert study.continues is False and study.workers == 2 and study.fidelities == BUDGETS


@pytest.mark.parametrize(
    "step, error",
    [(math.nan, ValueError), (math.inf, ValueError), (-1, ValueError), ("3", TypeError), (True, TypeError)],
)
def test_a_bad_report_step_is_refused_and_changes_nothing(step, error):
    study = Study(SMALL, searcher="random_search", seed=0, max_trials=4, pruner="asha", fidelities=[1, 2, 4])
    t = study.ask()
    with pytest.raises(error, match="report: the step of trial 0") as e:
        study.report(t, step, 0.5)
    one_line(e)
    assert t.intermediate_values == {} and not study.should_prune(t)
    assert study.report(t, 0, 0.5) is False and t.intermediate_values == {0.0: 0.5}  # step 0: before training


def test_an_infinite_step_does_not_record_the_value_at_every_rung():
    study = Study(SMALL, searcher="random_search", seed=0, max_trials=4, pruner="asha", fidelities=[1, 2, 4])
    t = study.ask()
    with pytest.raises(ValueError):
        t.report(0.5, step=math.inf)
    assert not bool(study.pruner.rungs.has.any())


def test_a_bad_tell_is_refused_before_anything_changes():
    study = Study(SMALL, searcher="random_search", seed=0, max_trials=4)
    t = study.ask()
    for kwargs, error, words in [
        (dict(value="x"), TypeError, ("the value of trial 0",)),
        (dict(value=0.5, cost=math.nan), ValueError, ("the cost of trial 0",)),
        (dict(value=0.5, cost="abc"), TypeError, ("the cost of trial 0",)),
        (dict(value=0.5, state="done"), ValueError, ("tell(state=...)",)),
    ]:
        with pytest.raises(error) as e:
            study.tell(t, **kwargs)
        one_line(e, *words)
        assert t.state == "pending" and study.pending() == [t]
    study.tell(t, 0.5)
    assert t.state == "complete"


def test_bad_ask_and_load_arguments_are_one_line(tmp_path):
    study = Study(SMALL, searcher="random_search", seed=0, max_trials=4)
    for n in (-1, 1.5, "2", True):
        with pytest.raises(ValueError, match="ask\\(n\\): n must be a non-negative integer"):
            study.ask(n)
    with pytest.raises(TypeError, match="read_only must be True or False"):
        load_study(str(tmp_path / "s.jsonl"), read_only="yes")
    with pytest.raises(TypeError, match="storage must be a file path"):
        load_study(3)
