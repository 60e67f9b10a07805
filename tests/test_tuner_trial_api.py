"""The objective's one signature, as Optuna users write it: it always gets the trial (``trial.params``,
``trial.suggest_*`` checked against the declared space, ``trial.report(value, step)``, ``trial.budget``,
``set_user_attr``); the budget is ``max_trials=`` or ``max_resource=``; nasjax 0.2's forms (``params[...]``,
``report(step, value)``, ``max_queries=``) keep working with one warning each, with the same numbers."""

from __future__ import annotations

import json
import pickle
import warnings

import pytest

import nas
from nas.host.study import Study, create_study, load_study
from nas.host.trials import Trial, TrialPruned, report_order

SPACE = {"lr": nas.Float(1e-4, 1.0, log=True), "act": ["relu", "tanh"], "layers": nas.Int(1, 4)}
SMALL = {"a": [1, 2, 3, 4], "b": [0.1, 0.2, 0.3]}
BUDGETS = [1, 3, 9]


def one_line(excinfo) -> str:
    text = str(excinfo.value)
    assert "\n" not in text, text
    return text


def _suggested(trial):
    lr = trial.suggest_float("lr", 1e-4, 1.0, log=True)
    act = trial.suggest_categorical("act", ["relu", "tanh"])
    layers = trial.suggest_int("layers", 1, 4)
    return lr * layers + (act == "tanh")


def test_the_objective_gets_the_trial_and_suggest_reads_the_searchers_value():
    seen = []

    def objective(trial):
        assert isinstance(trial, Trial)
        seen.append((trial.number, dict(trial.params), _suggested(trial)))
        return _suggested(trial)

    study = create_study(SPACE, searcher="random_search", direction="minimize", seed=0, max_trials=6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new style warns of nothing
        study.optimize(objective)
    assert [n for n, _, _ in seen] == list(range(6))
    for (_, params, value), trial in zip(seen, study.trials):
        assert params == trial.params and value == trial.value  # suggest_* returned the searcher's values
        assert value == params["lr"] * params["layers"] + (params["act"] == "tanh")
    # a worker process checks suggest calls from plain data: unpickling a trial imports neither spaces nor JAX
    assert b"spaces" not in pickle.dumps(study.trials[0].payload())


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda t: t.suggest_float("lr", 1e-3, 1.0, log=True), "call trial.suggest_float('lr', 0.0001, 1.0, log=True)"),
        (lambda t: t.suggest_float("lr", 1e-4, 1.0), "declares 'lr': nas.Float(0.0001, 1.0, log=True)"),
        (lambda t: t.suggest_int("lr", 1, 4), "call trial.suggest_float('lr'"),
        (lambda t: t.suggest_int("layers", 1, 4, step=2), "call trial.suggest_int('layers', 1, 4)"),
        (lambda t: t.suggest_categorical("act", ["tanh", "relu"]), "call trial.suggest_categorical('act', ['relu'"),
        (lambda t: t.suggest_float("momentum", 0.0, 0.99), "add 'momentum': nas.Float(0.0, 0.99) to the space"),
    ],
)
def test_a_suggest_call_that_does_not_match_the_space_is_one_line_naming_the_fix(call, words):
    study = create_study(SPACE, searcher="random_search", seed=0, max_trials=2)
    trial = study.ask()
    with pytest.raises(ValueError) as e:
        call(trial)
    assert words in one_line(e)
    with pytest.raises(ValueError, match="does not match|is not in the study's space"):
        study.optimize(call, n_trials=1)  # raised from the objective; the trial stays pending
    assert [t.number for t in study.pending()] == [0]


def test_suggest_on_a_space_object_and_define_by_run_say_what_to_do_instead():
    study = Study(_space_object(), "random_search", max_trials=2)
    with pytest.raises(ValueError, match="read its configuration as trial.params") as e:
        study.ask().suggest_float("lr", 0.0, 1.0)
    one_line(e)
    for make in (lambda: create_study(), lambda: nas.create_study(direction="minimize"), lambda: Study()):
        with pytest.raises(TypeError, match=r"define-and-run\), e.g. nas.create_study\(\{'lr': nas.Float") as e:
            make()
        one_line(e)


def _space_object():
    from spaces.base import CategoricalSpace

    return CategoricalSpace("toy", {"a": [1, 2, 3]})


def test_an_old_objective_that_reads_params_works_with_one_deprecation_warning_per_trial():
    def old(params):  # nasjax 0.2: a plain study handed the params
        return params["a"] * params["b"] + len(params) + ("a" in params) + sum(1 for _ in params)

    def new(trial):
        p = trial.params
        return p["a"] * p["b"] + len(p) + ("a" in p) + sum(1 for _ in p)

    reference = Study(SMALL, "random_search", direction="minimize", seed=1, max_trials=5).optimize(new)
    study = Study(SMALL, "random_search", direction="minimize", seed=1, max_trials=5)
    with pytest.warns(DeprecationWarning, match=r"read trial.params\[name\]") as record:
        study.optimize(old)
    assert len([w for w in record if issubclass(w.category, DeprecationWarning)]) == 5  # one per trial
    assert [t.value for t in study.trials] == [t.value for t in reference.trials]
    trial = study.trials[0]
    with pytest.warns(DeprecationWarning):
        assert dict(Trial(0, trial.tokens, dict(trial.params))) == trial.params  # keys() and [] as a dict's
    with pytest.raises(TypeError):
        trial["a"] = 3  # read-only


def test_report_order_reads_optuna_order_and_never_swaps_silently():
    def read(a, b):
        t = Trial(0, None, {})
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            out = report_order(t, a, b)
        return out, [x.category for x in w]

    assert read(0.41, 3) == ((0.41, 3), [])  # Optuna's: an integer step second
    assert read(2, 3) == ((2, 3), [])
    assert read(3, 0.41) == ((0.41, 3), [DeprecationWarning])  # nasjax 0.2's: a whole step, then a value
    assert read(3, -0.5) == ((-0.5, 3), [DeprecationWarning])  # the second is no step
    assert read(2.0, float("nan"))[0][1] == 2.0
    assert read(0.5, 2.0) == ((0.5, 2.0), [FutureWarning])  # both could be the step: Optuna's, and it says so
    assert read(0.25, 0.5) == ((0.25, 0.5), [FutureWarning])
    assert read(-0.5, 2.0) == ((-0.5, 2.0), [])  # a negative first number is no step: Optuna's, unambiguous


def _pruned_study(**kwargs):
    return Study(SMALL, "random_search", direction="maximize", seed=2, max_trials=10, fidelities=[1, 3, 9],
                 **kwargs)  # fmt: skip


@pytest.mark.parametrize("pruner", ["asha", "hyperband"])
def test_the_new_report_order_prunes_as_the_old_one_did(pruner):
    def curve(trial, step):
        return (trial.params["a"] * trial.params["b"] + 0.013) * (1 - 0.5**step)

    def run(report):
        def objective(trial):
            for step in range(1, 10):
                report(trial, curve(trial, step), step)
                if trial.should_prune():
                    raise TrialPruned()
            return curve(trial, 9)

        study = _pruned_study(pruner=pruner)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            study.optimize(objective)
        return study, [x.category for x in w]

    new, w_new = run(lambda t, v, s: t.report(v, s))
    keywords, w_kw = run(lambda t, v, s: t.report(step=s, value=v))
    old, w_old = run(lambda t, v, s: t.report(s, v))  # nasjax 0.2's order: step first
    assert w_new == [] and w_kw == [] and set(w_old) == {DeprecationWarning}
    assert len(w_old) == len(old.trials)  # once per trial
    ref = [(t.state, t.value, t.intermediate_values) for t in new.trials]
    assert any(t.state == "pruned" for t in new.trials)
    assert [(t.state, t.value, t.intermediate_values) for t in keywords.trials] == ref
    assert [(t.state, t.value, t.intermediate_values) for t in old.trials] == ref


def test_report_arguments_are_checked_in_one_line():
    trial = _pruned_study(pruner="asha").ask()
    for call, words in [(lambda: trial.report(0.5), "give the step"), (lambda: trial.report(step=3), "give the value"),
                        (lambda: trial.report(0.5, 3, 4), "takes two numbers"),
                        (lambda: trial.report(0.5, 3, step=3), "both by position and by keyword")]:  # fmt: skip
        with pytest.raises(TypeError, match=words) as e:
            call()
        one_line(e)
    trial.report(0.5, step=3)
    assert trial.intermediate_values == {3.0: 0.5}


def test_the_budget_is_max_trials_or_max_resource_and_max_queries_still_works():
    sf = Study(SMALL, "random_search", seed=0, max_trials=3)
    assert sf.max_trials == 3 and sf.max_resource is None and sf.max_queries == 3
    mf = Study(SMALL, "asha", seed=0, max_resource=4 * 9, fidelities=BUDGETS)
    assert mf.max_resource == 36 and mf.max_trials is None and mf.searcher.options.max_queries == 4
    with pytest.warns(DeprecationWarning, match=r"give max_resource=4 \* fidelities\[-1\]"):
        old_mf = Study(SMALL, "asha", seed=0, max_queries=4, fidelities=BUDGETS)
    with pytest.warns(DeprecationWarning, match="give max_trials=3"):
        old_sf = create_study(SMALL, "random_search", seed=0, max_queries=3)
    budget = lambda t: float(t.params["a"]) + t.budget / 10  # noqa: E731
    mf.optimize(budget)
    old_mf.optimize(budget)
    jobs = lambda s: [(t.params, t.budget, t.parent) for t in s.trials]  # noqa: E731
    assert jobs(mf) == jobs(old_mf)
    assert mf.spent == old_mf.spent <= 36
    sf.optimize(lambda t: t.params["a"])
    old_sf.optimize(lambda t: t.params["a"])
    assert [t.params for t in sf.trials] == [t.params for t in old_sf.trials]
    with pytest.raises(ValueError, match=r"n_trials=5 exceeds the remaining budget \(3 of max_trials=3\); create the "
                       r"study with max_trials=5") as e:  # fmt: skip
        Study(SMALL, "random_search", seed=0, max_trials=3).optimize(lambda t: 0.0, n_trials=5)  # Optuna's habit
    one_line(e)
    with pytest.raises(ValueError, match="max_trials=100 exceeds the 12 distinct configurations") as e:
        Study(SMALL, "random_search")  # the default budget: 100 trials
    one_line(e)


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(searcher="random_search", max_trials=3, max_queries=3), "one budget, not max_queries and max_trials"),
        (dict(searcher="asha", fidelities=BUDGETS, max_trials=3), "its budget is compute, max_resource="),
        (dict(searcher="random_search", max_resource=27), "give max_trials="),
        (dict(searcher="asha", fidelities=BUDGETS, max_resource=20), "a whole number of full trainings"),
        (dict(searcher="asha", fidelities=BUDGETS, max_resource=0), "fidelities[-1]=9 each, e.g. 9, 90, 180"),
        (dict(searcher="random_search", max_trials=0), "max_trials must be a positive integer"),
        (dict(searcher="random_search", max_trials=2.5), "max_trials must be a positive integer"),
    ],
)
def test_a_wrong_budget_is_one_line(kwargs, words):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.raises(ValueError) as e:
            Study(SMALL, seed=0, **kwargs)
    assert words in one_line(e)


def test_a_study_file_keeps_max_queries_and_loads_without_a_warning(tmp_path):
    path = str(tmp_path / "mf.jsonl")
    study = Study(SMALL, "asha", seed=0, max_resource=3 * 9, fidelities=BUDGETS, storage=path)

    def objective(trial):
        trial.set_user_attr("epochs", trial.budget)
        return float(trial.params["a"]) + trial.budget / 10

    study.optimize(objective, n_trials=4)
    with open(path) as f:
        header = json.loads(f.readline())
    assert header["settings"]["max_queries"] == 3  # the format of nasjax 0.2's files (and every one before)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = load_study(path, read_only=True)
    assert loaded.max_resource == 27 and [t.user_attrs for t in loaded.trials] == [t.user_attrs for t in study.trials]
    assert loaded.trials[0].user_attrs == {"epochs": study.trials[0].budget}
    sf_path = str(tmp_path / "sf.jsonl")
    Study(SMALL, "random_search", seed=0, max_trials=3, storage=sf_path).optimize(lambda t: t.params["a"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load_study(sf_path, read_only=True).max_trials == 3


def test_user_attrs_come_back_from_thread_workers_and_must_be_json_in_a_study_file(tmp_path):
    study = Study(SMALL, "random_search", seed=0, max_trials=4, batch_size=2)

    def objective(trial):
        trial.set_user_attr("a_twice", 2 * trial.params["a"])
        return trial.params["a"]

    study.optimize(objective, n_workers=2, backend="thread")
    assert all(t.user_attrs == {"a_twice": 2 * t.params["a"]} for t in study.trials)
    stored = Study(SMALL, "random_search", seed=0, max_trials=2, storage=str(tmp_path / "s.jsonl"))
    trial = stored.ask()
    trial.set_user_attr("net", object())
    with pytest.raises(TypeError, match="user attribute 'net'") as e:
        stored.tell(trial, 1.0)
    one_line(e)
    assert trial.state == "pending"


def _pruned_training(trial):
    """Suggest calls, Optuna's report order and a user attribute, in a worker process."""
    a, b = trial.suggest_categorical("a", [1, 2, 3, 4]), trial.suggest_categorical("b", [0.1, 0.2, 0.3])
    for step in range(1, 10):
        trial.report((a * b + 0.013) * (1 - 0.5**step), step)
        if trial.should_prune():
            trial.set_user_attr("stopped_at", step)
            raise TrialPruned()
    trial.set_user_attr("stopped_at", None)
    return (a * b + 0.013) * (1 - 0.5**9)


@pytest.mark.slow
def test_process_workers_suggest_report_and_bring_user_attrs_back():
    inline = _pruned_study(pruner="asha").optimize(_pruned_training)
    study = _pruned_study(pruner="asha", batch_size=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        study.optimize(_pruned_training, n_workers=2, backend="process")
    assert any(t.state == "pruned" for t in study.trials)
    for t in study.trials:
        stopped = max(t.intermediate_values) if t.state == "pruned" else None
        assert t.user_attrs == {"stopped_at": stopped}, t
    assert {t.number: t.user_attrs for t in inline.trials} == {
        t.number: {"stopped_at": max(t.intermediate_values) if t.state == "pruned" else None} for t in inline.trials
    }


# journals written by nasjax before the budget arguments were renamed (at 587e4ff), byte for byte; the mf one
# stops after four results, as a study killed mid-run
OLD_SF_JOURNAL = """\
{"event":"study","kind":"single","version":2,"settings":{"space":{"a":[1,2,3,4],"b":[0.1,0.2,0.3]},"searcher":"random_search","direction":"minimize","seed":0,"directions":null,"max_queries":3,"pruner":null,"pruned":"last_value","directory":null}}
{"event":"ask","number":0,"tokens":[3,2],"start":"2026-12-02T01:07:30.828356"}
{"event":"tell","number":0,"state":"complete","value":1.2,"cost":3.1106001188163646e-05,"complete":"2026-12-02T01:07:30.837985"}
{"event":"ask","number":1,"tokens":[0,1],"start":"2026-12-02T01:07:30.908469"}
{"event":"tell","number":1,"state":"complete","value":0.2,"cost":2.9234000976430252e-05,"complete":"2026-12-02T01:07:30.917751"}
{"event":"ask","number":2,"tokens":[2,0],"start":"2026-12-02T01:07:30.922278"}
{"event":"tell","number":2,"state":"complete","value":0.30000000000000004,"cost":3.091600046900567e-05,"complete":"2026-12-02T01:07:30.929812"}
"""
OLD_MF_JOURNAL = """\
{"event":"study","kind":"multi_fidelity","version":2,"settings":{"space":{"a":[1,2,3,4],"b":[0.1,0.2,0.3]},"searcher":"asha","direction":"maximize","seed":0,"max_queries":2,"fidelities":[1,3,9],"workers":1,"continues":true,"directory":null}}
{"event":"ask","number":0,"tokens":[0,1],"start":"2026-12-02T01:07:35.455359","fidelity":0}
{"event":"tell","number":0,"state":"complete","value":0.30000000000000004,"cost":6.118998499005102e-06,"complete":"2026-12-02T01:07:35.469849"}
{"event":"ask","number":1,"tokens":[1,1],"start":"2026-12-02T01:07:36.305335","fidelity":0}
{"event":"tell","number":1,"state":"complete","value":0.5,"cost":5.427998985396698e-06,"complete":"2026-12-02T01:07:36.306470"}
{"event":"ask","number":2,"tokens":[3,2],"start":"2026-12-02T01:07:36.308595","fidelity":0}
{"event":"tell","number":2,"state":"complete","value":1.3,"cost":2.6939997042063624e-06,"complete":"2026-12-02T01:07:36.309035"}
{"event":"ask","number":3,"tokens":[3,2],"start":"2026-12-02T01:07:36.313822","fidelity":1,"parent":2}
{"event":"tell","number":3,"state":"complete","value":1.5,"cost":5.747999239247292e-06,"complete":"2026-12-02T01:07:36.317811"}
"""


def test_journals_written_before_load_and_continue_as_a_new_study_runs(tmp_path):
    for name, text in (("sf.jsonl", OLD_SF_JOURNAL), ("mf.jsonl", OLD_MF_JOURNAL)):
        (tmp_path / name).write_text(text)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a file is data: no deprecation for what it keeps
        sf = load_study(str(tmp_path / "sf.jsonl"))
        mf = load_study(str(tmp_path / "mf.jsonl"))
    assert sf.max_trials == 3 and [t.value for t in sf.trials] == [1.2, 0.2, 0.30000000000000004]
    assert mf.max_resource == 2 * 9 and [t.budget for t in mf.trials] == [1.0, 1.0, 1.0, 3.0]
    mf.optimize(lambda t: t.params["a"] * t.params["b"] + t.budget / 10)
    fresh = Study(SMALL, "asha", direction="maximize", seed=0, max_resource=2 * 9, fidelities=BUDGETS)
    fresh.optimize(lambda t: t.params["a"] * t.params["b"] + t.budget / 10)
    jobs = lambda s: [(t.tokens.tolist(), t.budget, t.parent, t.value) for t in s.trials]  # noqa: E731
    assert jobs(mf) == jobs(fresh) and mf.best_value == fresh.best_value
