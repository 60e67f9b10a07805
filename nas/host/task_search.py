"""Whole searches on a batch evaluator: the language experiments' runs, each a thin use of a ``Study``.

The compiled runners (``nas.engine.runner``, ``nas.engine.multi_fidelity_runner``) need ``query`` under jit.
Objectives that train networks whose shapes depend on the token values (``spaces.language.tasks``) are
evaluated in Python instead, on a batch evaluator: the study's compiled ``ask`` proposes, the task
evaluates, ``tell`` receives the validation scores. Both runs keep the compiled engines' key schedules
(the Study's drivers do), so a run on a table proposes exactly the runner's strings with the same seed.

- ``run_task_search``: a single-fidelity searcher, one batch at a time
  (``evaluate(tokens[B, N], seeds[B]) -> {"valid", "test", "cost", ...}``, so the task can group and vmap
  candidates); the rows of every evaluation.
- ``run_task_mf_search``: a multi-fidelity searcher object with one worker
  (``evaluate(tokens[1, N], seeds[1], fidelity[1], parent[1])``, ``parent`` a fidelity index or -1): with
  one worker the engine is sequential and this is that engine step for step, the result an ``MFHistory``
  with numpy leaves (rows at the engine's steps, in the order results arrived; the engine's fill after
  the last: ``fidelity -1``, scores ``-inf``, zero charges). ``resource`` is the engine's charge (the budget,
  or the difference to the parent's on an objective that ``continues``); ``cost`` what ``evaluate`` says
  the evaluation spent, ``finish`` the running sum of costs (float32, as the engine's).

Every evaluation of a run trains with one seed, ``train_seed``, so two searchers score an architecture
they both propose identically and a promotion continues the same training. A validation score that is
not finite (an invalid string, a diverged training) is a failed evaluation: the searcher is told ``-inf``
and the row records ``-inf``, never a result. For trainings of your own (several workers, checkpoints, a
journal on disk) use the ``Study`` itself (docs/tutorials/tuning.md).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable

import jax
import numpy as np

from nas.core.multi_fidelity import MultiFidelitySearcher
from nas.engine.incumbent import incumbent_indices
from nas.engine.multi_fidelity_runner import MFHistory, empty_mf_history
from nas.host.mf_schedule import charge
from nas.host.study import Study
from nas.host.study_budget import study_arguments
from nas.host.trials import BudgetSpent


def run_task_search(
    evaluate: Callable[[np.ndarray, np.ndarray], dict],
    space,
    searcher: str,
    seed: int,
    max_queries: int,
    train_seed: int | None = None,
    **options,
) -> dict[str, np.ndarray]:
    """One search: ``max_queries`` evaluations proposed by registered searcher ``searcher``.

    ``train_seed`` (default ``seed``) seeds every evaluation of the run. Returns numpy arrays over queries:
    ``tokens`` int32[Q, N], ``valid``, ``test``, ``cost`` (f32[Q]), every other key ``evaluate`` returns, and
    ``wall_s`` (seconds at each query's batch end)."""
    study = Study(space, direction="maximize", seed=seed,
                  **study_arguments(dict(searcher=searcher, max_queries=max_queries, **options)))
    train_seed = seed if train_seed is None else int(train_seed)
    rows: dict[str, list] = {"tokens": [], "wall_s": []}
    start = time.perf_counter()
    while len(study.trials) < max_queries:
        trials = study.ask(min(study.batch_size, max_queries - len(study.trials)))
        tokens = np.stack([t.tokens for t in trials]).astype(np.int32)
        res = evaluate(tokens, np.full(len(trials), train_seed, np.int64))
        for t, v in zip(trials, np.asarray(res["valid"], np.float64)):
            study.tell(t, float(v) if np.isfinite(v) else None)
        rows["tokens"].append(tokens)
        rows["wall_s"].append(np.full(len(trials), time.perf_counter() - start))
        for k, v in res.items():
            rows.setdefault(k, []).append(np.asarray(v, np.float32))
    return {k: np.concatenate(v) for k, v in rows.items()}


def run_task_mf_search(
    searcher: MultiFidelitySearcher,
    evaluate: Callable[..., dict],
    key: jax.Array,
    train_seed: int = 0,
    continues: bool = False,
) -> MFHistory:
    """One run of ``searcher`` (built with ``workers=1``) on the task's ``evaluate`` with PRNG key ``key``
    (module docstring); ``continues``: whether the objective continues a lower fidelity's training
    (``objective.continues``)."""
    if searcher.workers != 1:
        raise ValueError(f"the task loop runs one worker; build the searcher with workers=1, not {searcher.workers}")
    study = Study(searcher.space, searcher, direction="maximize", seed=key, continues=continues)
    schedule = study._driver.schedule  # the engine's steps: the row of each result
    rows = jax.tree.map(np.array, empty_mf_history(searcher))
    clock = np.float32(0.0)
    while schedule.step < searcher.num_steps:
        try:
            trial = study.ask()  # idle steps (no job, nothing running) move the step on
        except BudgetSpent:
            break  # the engine's later steps neither ask nor tell
        job = study._driver.job(trial)
        tokens, fidelity, parent = job["tokens"][None], job["fidelity"], job["parent"]
        res = evaluate(tokens, np.asarray([train_seed]), np.asarray([fidelity]), np.asarray([parent]))
        valid, test, cost = (np.float32(np.asarray(res[k]).reshape(-1)[0]) for k in ("valid", "test", "cost"))
        if not np.isfinite(valid):  # a diverged or crashed evaluation: failed, never a result
            valid, test = np.float32(-np.inf), np.float32(-np.inf)
        clock = np.float32(clock + cost)  # float32 sums, as the engine's
        row = {"tokens": tokens[0], "fidelity": fidelity, "score": valid, "report_score": test, "cost": cost,
               "resource": charge(schedule.budgets, fidelity, parent, continues), "finish": clock}  # fmt: skip
        for name, value in row.items():
            getattr(rows, name)[schedule.step] = value
        study.tell(trial, float(valid) if np.isfinite(valid) else None, cost=float(cost))
    return rows


def incumbent_curves(valid: np.ndarray, test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Best validation score so far and the test score of that incumbent, per query (f32[Q] each)."""
    valid = np.where(np.isfinite(valid), valid, -np.inf)
    idx = np.maximum(incumbent_indices(valid), 0)  # query 0 while none is above -inf
    return np.maximum.accumulate(valid), np.asarray(test)[idx]


_RENAMED = {"run_host_search": "run_task_search", "run_host_mf_search": "run_task_mf_search"}  # 0.2's names


def __getattr__(name: str):
    if name in _RENAMED:
        warnings.warn(f"{name} is now nas.host.task_search.{_RENAMED[name]}", DeprecationWarning, stacklevel=2)
        return globals()[_RENAMED[name]]
    raise AttributeError(f"module 'nas.host.task_search' has no attribute {name!r}")
