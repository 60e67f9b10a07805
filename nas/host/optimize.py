"""``Study.optimize``'s loop: trials on workers, every result told as it arrives.

``run_optimize`` fills every free worker (``nas.host.workers``) with a trial (a pending one first:
handed out earlier and never told, e.g. before a crash; else a new ``study.ask()``), waits for the next
event and hands it to the study, until ``n_trials`` evaluations ran or the study has nothing left. It
drives the study through its public methods only (``pending``, ``ask``, ``report``, ``should_prune``,
``tell``), so single- and multi-fidelity studies run the same loop:

- ``report``: an intermediate value, told with ``study.report``; the pruner's decision goes back to the
  objective (``trial.should_prune()``);
- ``done``: the objective returned; ``study.tell(trial, value, cost=seconds)`` (None, NaN or an infinity:
  a failed evaluation); a trial the pruner stopped is told ``state="pruned"`` with the value returned;
- ``pruned``: the objective raised ``TrialPruned``: told ``state="pruned"`` (its last reported value);
- ``error``: the objective raised. An exception listed in ``catch`` marks the trial failed; any other stops
  the asking, the running trials finish and are told, then it is raised again and its trial stays pending
  (the next ``optimize`` evaluates it first); a value ``tell`` refuses (a string) is raised the same way;
- ``crash``: the worker died (killed, ``os._exit``, out of memory): only its trial is lost. It runs again
  on a fresh worker up to ``retries`` times, then is recorded as failed; the study goes on.

When the searcher has no trial now (its batch is out, or a synchronous rung waits for its last results)
the loop waits for a running one. The searcher's decisions depend only on the order results are told,
so one worker inline decides exactly what the compiled engine does.
"""

from __future__ import annotations

import collections
import warnings
from typing import Any

from nas.host.trials import BudgetSpent, NoTrialNow


def run_optimize(study, fn, n_trials: int | None, workers, catch: tuple, retries: int) -> None:
    """Runs ``study``'s trials on ``workers`` (module docstring); ``n_trials`` None: until nothing is left."""
    workers.start(fn, study.passes_trial)
    running: dict[int, Any] = {}
    attempts: collections.Counter = collections.Counter()
    started, asking, error = 0, True, None
    try:
        while True:
            while asking and error is None and workers.free() and (n_trials is None or started < n_trials):
                again = [t for t in study.pending() if t.number not in running]
                try:
                    trial = again[0] if again else study.ask()
                except NoTrialNow:
                    break  # the searcher waits for a running trial's result
                except BudgetSpent:
                    asking = False
                    break
                running[trial.number] = trial
                workers.submit(trial)
                started += 1
            if not running:
                break
            event = workers.next_event()
            if event.number not in running:  # a stale event of a trial already handled
                if event.reply is not None:
                    event.reply(True)  # a worker still waiting on it stops
                continue
            if event.kind == "report":
                event.reply(study.report(event.number, event.step, event.value))
                continue
            trial = running.pop(event.number)
            if event.kind == "crash":
                attempts[trial.number] += 1
                if attempts[trial.number] <= retries:
                    warnings.warn(f"trial {trial.number}: its worker died ({event.value}); running it again "
                                  f"(attempt {attempts[trial.number] + 1})", stacklevel=3)  # fmt: skip
                    running[trial.number] = trial
                    workers.submit(trial)
                else:
                    warnings.warn(f"trial {trial.number}: its worker died ({event.value}); recorded as a failed "
                                  "evaluation", stacklevel=3)  # fmt: skip
                    study.tell(trial, None, cost=event.elapsed)
            elif event.kind == "error" and not isinstance(event.value, catch):
                error = error or event.value  # the trial stays pending: evaluated again by the next optimize
            else:
                try:
                    _tell_event(study, trial, event)
                except (TypeError, ValueError) as e:  # a value that is not a number: raised after the others
                    error = error or e
    finally:
        workers.close()
    if error is not None:
        raise error


def _tell_event(study, trial, event) -> None:
    """How a trial ended, told to the study: a value, a pruned trial, a caught exception (a failure)."""
    if event.kind == "error":
        study.tell(trial, None, cost=event.elapsed)
    elif event.kind == "pruned" or study.should_prune(trial):
        study.tell(trial, event.value if event.kind == "done" else None, cost=event.elapsed, state="pruned")
    else:
        study.tell(trial, event.value, cost=event.elapsed)
