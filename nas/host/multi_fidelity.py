"""Multi-fidelity searchers on host objectives: one worker, a Python loop around the compiled ``ask``/``tell``.

The compiled engine (``nas.engine.multi_fidelity_runner``) needs ``query`` under jit. Objectives that
train networks whose shapes depend on the tokens (``spaces.language.tasks``) are evaluated on the
host instead: each step the searcher's jit-compiled ``ask`` proposes one job, the host evaluates it
(``evaluate(tokens[1, N], seeds[1], fidelity[1], parent[1]) -> {"valid", "test", "cost", ...}``), and
``tell`` receives the validation score. With one worker the engine is sequential, and this loop is
that engine step for step (its bookkeeping is the multi-fidelity Study's, ``nas.host.mf_schedule``):

- keys: init ``fold_in(key, INIT_FOLD)``; step ``t`` splits ``fold_in(key, t)`` into (ask, query, tell)
  keys and asks with ``fold_in(ask key, 0)`` (worker 0); every evaluation of a run trains with one
  seed, ``train_seed``, so a promotion continues the same training;
- a job is asked while the resource spent is below the budget; an ask with no job (``ok`` False)
  leaves step ``t``'s row empty, as the engine's idle worker does;
- a validation score that is not finite (NaN: a diverged training) is a failed evaluation: the
  searcher is told ``-inf`` and the row records ``-inf``, never a result;
- charges: ``resource`` is the engine's (``charged_resource``: the budget, or the difference to the
  parent's on an objective that ``continues``); ``cost`` is what ``evaluate`` says the evaluation
  spent (for a continued training, the continued part), and ``finish`` the running sum of costs.

The result is an ``MFHistory`` with numpy leaves, rows in the order results arrived, the engine's
fill after the last one (``fidelity -1``, scores ``-inf``, zero charges). For trainings of your own (several
workers, checkpoints, a journal on disk) use the multi-fidelity Study instead (``nas.host.mf_study``,
docs/tuner.md); this loop is what the language experiments call with a batch evaluator.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import numpy as np

from nas.core.multi_fidelity import MultiFidelitySearcher
from nas.engine.multi_fidelity_runner import MFHistory, empty_mf_history
from nas.host.mf_schedule import MFSchedule, charge
from nas.host.trials import BudgetSpent


def run_host_mf_search(
    searcher: MultiFidelitySearcher,
    evaluate: Callable[..., dict],
    key: jax.Array,
    train_seed: int = 0,
    continues: bool = False,
) -> MFHistory:
    """One run of ``searcher`` on the host objective ``evaluate`` (module docstring); ``continues``: whether the
    objective continues a lower fidelity's training (``objective.continues``)."""
    if searcher.workers != 1:
        raise ValueError(f"the host loop runs one worker; build the searcher with workers=1, not {searcher.workers}")
    schedule = MFSchedule(searcher, key, continues)
    rows = jax.tree.map(np.array, empty_mf_history(searcher))
    clock = np.float32(0.0)
    while schedule.step < searcher.num_steps:
        try:
            job, slot = schedule.ask()  # idle steps (no job, nothing running) move the step on
        except BudgetSpent:
            break  # the engine's later steps neither ask nor tell
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
        schedule.tell(job, slot, valid)
    return rows

