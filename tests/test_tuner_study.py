"""The multi-fidelity Study (nas/host/job_driver.py, mf_schedule.py): its decisions are the compiled engine's.

An engine run with W workers on a hand-made table (tests/mf_tables.py) is replayed through the Study in
the order its results arrived: the Study must ask for exactly the jobs the engine dispatched (tokens,
fidelity, parent), in order, and end with the same incumbent. With one worker, ``optimize`` equals the
task loop (nas/host/task_search.py)."""

import warnings

import jax
import numpy as np
import pytest

from nas.engine.incumbent import incumbent_indices, top_fidelity_score
from nas.engine.multi_fidelity_runner import make_mf_search
from nas.host.study import Study, create_study
from nas.host.study_budget import study_arguments
from nas.host.task_search import run_task_mf_search
from nas.host.trials import BudgetSpent, NoTrialNow
from nas.searchers import make_searcher
from tests.mf_tables import BUDGETS, SPACE, python_engine, score, toy_table

TABLE = toy_table()


def table_value(tokens, fidelity) -> float:
    """The toy table's validation score (f32, as the engine reads it) of ``tokens`` at ``fidelity``."""
    return float(np.float32(score(tuple(int(x) for x in tokens), BUDGETS[int(fidelity)])))


def replay(study, history, workers: int):
    """Tells the Study the engine's results in their arrival order, refilling free workers before each one."""
    rows = int(np.sum(history["fidelity"] >= 0))
    for t in range(rows):
        while len(study.pending()) < workers:
            try:
                study.ask()
            except (NoTrialNow, BudgetSpent):
                break
        want = (history["tokens"][t].tolist(), int(history["fidelity"][t]))
        match = [tr for tr in study.pending() if (tr.tokens.tolist(), tr.fidelity) == want]
        assert len(match) == 1, f"result {t}: the engine finished {want}, the Study runs {study.pending()}"
        study.tell(match[0], float(history["score"][t]))
    return rows


@pytest.mark.parametrize("name,workers", [("asha", 3), ("hyperband", 3)])
def test_replaying_the_engine_arrival_order_gives_its_decisions(name, workers):
    options = dict(max_queries=6, fidelities=BUDGETS, workers=workers)
    s = make_searcher(name, SPACE, **options)
    key = jax.random.PRNGKey(2)
    h = jax.jit(make_mf_search(s))(key, TABLE)
    engine = {k: np.asarray(getattr(h, k)) for k in ("tokens", "fidelity", "score")}
    loop = python_engine(s, TABLE, key)  # the engine step by step, recording every dispatched job
    for k in ("tokens", "fidelity", "score"):
        np.testing.assert_array_equal(loop[k], engine[k][: len(loop[k])], err_msg=k)
    study = Study(SPACE, direction="maximize", seed=2, continues=False,
                  **study_arguments(dict(options, searcher=name)))  # a table: full charges; max_queries: max_resource
    assert type(study) is Study and study.workers == workers  # one class: the job driver inside
    rows = replay(study, engine, workers)
    asked = [(tuple(t.tokens.tolist()), t.fidelity, -1 if t.parent is None else study.trials[t.parent].fidelity)
             for t in study.trials]  # fmt: skip
    assert asked == loop["dispatched"] and len(study.trials) == rows and not study.pending()
    assert any(p >= 0 for _, _, p in asked)  # promotions were replayed
    for t in study.trials:  # a promotion names the trial it continues: same configuration, the fidelity below
        if t.parent is not None:
            parent = study.trials[t.parent]
            assert parent.tokens.tolist() == t.tokens.tolist() and parent.fidelity < t.fidelity
    best = incumbent_indices(top_fidelity_score(engine["score"], engine["fidelity"], len(BUDGETS)))[-1]
    assert study.best_trial.tokens.tolist() == engine["tokens"][best].tolist()
    assert study.best_value == pytest.approx(float(engine["score"][best]))
    with pytest.raises(BudgetSpent, match="spent"):
        study.ask()


def test_one_worker_optimize_equals_the_task_loop_and_failures_are_never_scores():
    options = dict(max_queries=4, fidelities=BUDGETS)  # the options of test_tuner_storage's killed study
    s = make_searcher("asha", SPACE, workers=1, **options)
    seed = 1
    plain = run_task_mf_search(s, lambda tk, sd, f, p: {"valid": [table_value(tk[0], f[0])], "test": [0.0],
                                                        "cost": [1.0]}, jax.random.PRNGKey(seed))  # fmt: skip
    bad = tuple(plain.tokens[1].tolist())  # the second configuration's training "diverges" at every budget

    def evaluate(tokens, seeds, fidelity, parent):
        v = np.nan if tuple(tokens[0].tolist()) == bad else table_value(tokens[0], fidelity[0])
        return {"valid": [v], "test": [v], "cost": [1.0]}

    def objective(trial):
        return np.nan if tuple(trial.tokens.tolist()) == bad else table_value(trial.tokens, trial.fidelity)

    host = run_task_mf_search(s, evaluate, jax.random.PRNGKey(seed))
    study = Study(SPACE, direction="maximize", seed=seed, continues=False,
                  **study_arguments(dict(options, searcher="asha")))
    with pytest.warns(UserWarning, match="recorded as a failed evaluation"):
        study.optimize(objective)
    n = len(study.trials)
    assert n == int(np.sum(host.fidelity >= 0)) and not study.pending()
    np.testing.assert_array_equal([t.tokens for t in study.trials], host.tokens[:n])  # one worker: asked = arrived
    np.testing.assert_array_equal([t.fidelity for t in study.trials], host.fidelity[:n])
    failed = [t for t in study.trials if t.state == "failed"]
    assert failed and all(tuple(t.tokens.tolist()) == bad and t.value is None for t in failed)
    rows = np.all(host.tokens[:n] == np.asarray(bad), axis=1)
    assert np.all(host.score[:n][rows] == -np.inf) and not np.any(np.isnan(host.score))  # -inf, never NaN
    assert study.best_trial.state == "complete" and study.best_trial.fidelity == len(BUDGETS) - 1


def test_a_synchronous_rung_waits_and_ask_says_how_to_proceed(tmp_path):
    study = Study(SPACE, "successive_halving", direction="minimize", seed=0, max_resource=4 * BUDGETS[-1],
                  fidelities=BUDGETS, workers=2, directory=str(tmp_path))  # fmt: skip
    first = [study.ask() for _ in range(9)]  # the bracket's 9 configurations at the lowest fidelity
    assert {t.fidelity for t in first} == {0} and all(t.parent is None for t in first)
    with pytest.raises(NoTrialNow, match=r"tell the pending trials \[0, 1, .*study.optimize"):
        study.ask()
    for t in first[:-1]:
        study.tell(t.number, float(t.tokens.sum()))  # by number, in any order
    with pytest.raises(NoTrialNow):
        study.ask()  # one result of the rung is still out
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        study.tell(first[-1], None)  # failed: no warning for None
    promoted = study.ask()
    assert promoted.fidelity == 1 and promoted.parent is not None and promoted.budget == BUDGETS[1]
    parent = study.trials[promoted.parent]
    assert parent.value == min(t.value for t in first if t.value is not None)  # best-first promotions
    assert promoted.checkpoint_dir == str(tmp_path / f"trial_{promoted.number:05d}")
    assert promoted.parent_checkpoint_dir == parent.checkpoint_dir
    assert promoted.parent_checkpoint_key == f"trial_{parent.number:05d}"
    assert (tmp_path / f"trial_{parent.number:05d}").is_dir()
    with pytest.raises(ValueError, match="not pending"):
        study.tell(first[0], 1.0)
    with pytest.raises(TypeError, match="real number"):
        study.tell(promoted, "0.5")
    with pytest.raises(ValueError, match="no trial has completed at the top fidelity"):
        _ = study.best_trial
    with pytest.raises(ValueError, match="'asha' is a multi-fidelity searcher: give fidelities"):
        Study(SPACE, searcher="asha")


def test_one_study_class_with_one_rule_of_tell_for_every_searcher():
    mf = create_study(SPACE, searcher="asha", fidelities=BUDGETS, max_resource=2 * BUDGETS[-1], seed=0)
    sf = create_study(SPACE, searcher="random_search", max_trials=6, seed=0, batch_size=3)
    assert type(mf) is Study and type(sf) is Study and (mf.kind, sf.kind) == ("multi_fidelity", "single")
    for study in (mf, sf):
        a, b, c = study.ask(), study.ask(), study.ask()
        study.tell(a, 1.5, cost=2.0)
        assert a.state == "complete" and a.value == 1.5 and a.cost == 2.0
        with pytest.warns(UserWarning, match="nan; recorded as a failed evaluation"):
            study.tell(b, float("nan"))
        assert b.state == "failed" and b.value is None
        with pytest.raises(TypeError, match="must be a real number"):
            study.tell(c, "0.5")
        with pytest.raises(TypeError, match="the cost of trial 2 must be a real number"):
            study.tell(c, 1.0, cost="3 s")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            study.tell(c.number, None)  # failed: no warning for None
        with pytest.raises(ValueError, match="is not pending"):
            study.tell(a, 1.0)
        assert c.state == "failed" and [t.state for t in study.pending()] == []
    assert sf.best_trials == [sf.best_trial] == [sf.trials[0]] and sf.best_value == 1.5  # minimized by default
    assert mf.best_trials == [] and mf.trials[0].fidelity == 0  # no result at the top fidelity yet
    with pytest.raises(ValueError, match="workers= and continues= are a multi-fidelity searcher's"):
        Study(SPACE, "random_search", workers=2)
    with pytest.raises(ValueError, match="give it no pruner"):
        Study(SPACE, "asha", fidelities=BUDGETS, pruner="asha")


def test_an_executor_runs_thread_workers_and_old_names_still_import():
    from concurrent.futures import ThreadPoolExecutor

    study = Study(SPACE, "asha", direction="maximize", seed=0, max_resource=3 * BUDGETS[-1], fidelities=BUDGETS,
                  continues=False)
    with ThreadPoolExecutor(2) as ex:
        study.optimize(lambda t: float(sum(t.tokens)) + t.budget / 10, executor=ex)
    assert study.workers == 2 and not study.pending() and all(t.state == "complete" for t in study.trials)
    assert all(t.cost is not None for t in study.trials) and study.best_trial.fidelity == len(BUDGETS) - 1

    import nas.host.study as study_module
    import nas.host.task_search as task_search
    import nas.host.workers as workers

    with pytest.warns(DeprecationWarning, match="MultiFidelityStudy is now nas.host.study.Study"):
        assert study_module.MultiFidelityStudy is Study
    for old, new in (("run_host_search", "run_task_search"), ("run_host_mf_search", "run_task_mf_search")):
        with pytest.warns(DeprecationWarning, match=f"{old} is now nas.host.task_search.{new}"):
            assert getattr(task_search, old) is getattr(task_search, new)
    with pytest.warns(DeprecationWarning, match="make_backend is now nas.host.workers.make_workers"):
        assert workers.make_backend is workers.make_workers
