"""``Study.optimize``'s loop: trials on workers, every result told as it arrives.

``run_optimize`` fills every free worker (``nas.host.workers``) with a trial (a pending one first:
handed out earlier and never told, e.g. before a crash; else a new ``study.ask()``), waits for the next
event and hands it to the study, until ``n_trials`` evaluations ran, ``timeout`` seconds passed (no trial
starts after it; the running ones finish and are told, as Optuna's) or the study has nothing left. It
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
  on a fresh worker up to ``retries`` times (not after the timeout: it stays pending), then is recorded as
  failed; the study goes on;
- ``timeout``: the trial ran past the workers' ``trial_timeout``; its worker was killed (the next trial
  gets a fresh one) and the trial is recorded as failed, with a warning that says so.

SIGTERM to the study process stops the loop as SIGINT does (``SystemExit(143)`` instead of
``KeyboardInterrupt``): the workers are shut down, a running trial's worker killed, before the process
exits. When the searcher has no trial now (its batch is out, or a synchronous rung waits for its last
results) the loop waits for a running one. The searcher's decisions depend only on the order results are
told, so one worker inline decides exactly what the compiled engine does. ``check_arguments`` checks
``optimize``'s arguments, one line each, before anything runs.
"""

from __future__ import annotations

import collections
import contextlib
import math
import numbers
import signal
import threading
import time
import warnings
from typing import Any

from nas.host.progress import Silent
from nas.host.trials import BudgetSpent, NoTrialNow


def run_optimize(study, fn, n_trials: int | None, workers, catch: tuple, retries: int, *,
                 timeout: float | None = None, progress=None) -> None:  # fmt: skip
    """Runs ``study``'s trials on ``workers`` (module docstring); ``n_trials`` None: until nothing is left;
    ``progress``: what is shown meanwhile (``nas.host.progress``)."""
    progress = progress or Silent()
    deadline = None if timeout is None else time.monotonic() + timeout
    running: dict[int, Any] = {}
    attempts: collections.Counter = collections.Counter()
    started, asking, error = 0, True, None
    with _sigterm_exits():
        workers.start(fn, study.passes_trial)
        try:
            progress.start()
            while True:
                while asking and error is None and workers.free() and (n_trials is None or started < n_trials):
                    if deadline is not None and time.monotonic() >= deadline:
                        asking = False  # Optuna's timeout: no trial starts after it, the running ones finish
                        break
                    again = [t for t in study.pending() if t.number not in running]
                    try:
                        with progress.searcher_call("ask"):
                            trial = again[0] if again else study.ask()
                    except NoTrialNow:
                        break  # the searcher waits for a running trial's result
                    except BudgetSpent:
                        asking = False
                        break
                    running[trial.number] = trial
                    progress.started(len(running))  # before submit: inline workers run the trial inside it
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
                if event.user_attrs:  # kept with the result (from another process: a copy comes back)
                    trial.user_attrs.update(event.user_attrs)
                if event.kind == "crash":
                    attempts[trial.number] += 1
                    late = deadline is not None and time.monotonic() >= deadline
                    if attempts[trial.number] <= retries and not late:
                        warnings.warn(f"trial {trial.number}: its worker died ({event.value}); running it again "
                                      f"(attempt {attempts[trial.number] + 1})", stacklevel=3)  # fmt: skip
                        running[trial.number] = trial
                        workers.submit(trial)
                        continue
                    if attempts[trial.number] <= retries:
                        warnings.warn(f"trial {trial.number}: its worker died ({event.value}) after the timeout; it "
                                      "stays pending (the next optimize runs it first)", stacklevel=3)  # fmt: skip
                        progress.started(len(running))
                        continue
                    warnings.warn(f"trial {trial.number}: its worker died ({event.value}); recorded as a failed "
                                  "evaluation", stacklevel=3)  # fmt: skip
                    with progress.searcher_call("tell"):
                        study.tell(trial, None, cost=event.elapsed)
                    progress.finished(trial, len(running), f"its worker died: {event.value}")
                elif event.kind == "timeout":
                    warnings.warn(f"trial {trial.number}: {event.value}; recorded as a failed evaluation",
                                  stacklevel=3)  # fmt: skip
                    with progress.searcher_call("tell"):
                        study.tell(trial, None, cost=event.elapsed)
                    progress.finished(trial, len(running), str(event.value))
                elif event.kind == "error" and not isinstance(event.value, catch):
                    error = error or event.value  # the trial stays pending: evaluated again by the next optimize
                    progress.started(len(running))
                else:
                    try:
                        with progress.searcher_call("tell"):
                            _tell_event(study, trial, event)
                    except (TypeError, ValueError) as e:  # a value that is not a number: raised after the others
                        error = error or e
                        progress.started(len(running))
                        continue
                    reason = f"{type(event.value).__name__}: {event.value}" if event.kind == "error" else None
                    progress.finished(trial, len(running), reason)
        finally:
            try:
                workers.close()
            finally:
                progress.close()
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


@contextlib.contextmanager
def _sigterm_exits():
    """SIGTERM raises ``SystemExit(128 + SIGTERM)`` in the loop (as SIGINT raises ``KeyboardInterrupt``), so the
    loop's cleanup stops the workers before the process ends; where SIGTERM has a handler of the program's own
    (or the loop runs outside the main thread) nothing changes."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) != signal.SIG_DFL:
        yield
        return

    def stop(signum, frame):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM does not cut the cleanup short
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


# -- optimize's arguments ----------------------------------------------------------------------------------
def _whole(x) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def _seconds(name: str, x, zero: bool) -> float | None:
    if x is None:
        return None
    if isinstance(x, bool) or not isinstance(x, numbers.Real) or math.isnan(x) or x < 0 or (x == 0 and not zero):
        least = "a non-negative" if zero else "a positive"
        raise ValueError(f"{name} must be {least} number of seconds or None (no limit), got {x!r}")
    return float(x)


def check_arguments(n_trials, n_workers, catch, retries, timeout, trial_timeout, show_progress) -> dict:
    """``optimize``'s arguments checked, one clear line each, and read: ``catch`` as a tuple of exception classes,
    the numbers as ``int`` and ``float``; ``n_workers`` None stays None (the caller decides it)."""
    if n_trials is not None and (not _whole(n_trials) or n_trials < 0):
        raise ValueError(f"n_trials must be a non-negative integer (0 runs nothing) or None (until the budget is "
                         f"spent), got {n_trials!r}")  # fmt: skip
    if n_workers is not None and (not _whole(n_workers) or n_workers < 1):
        raise ValueError(f"n_workers must be a positive integer (evaluations at once), got {n_workers!r}")
    if not _whole(retries) or retries < 0:
        raise ValueError(f"retries must be a non-negative integer (how often a trial whose worker died runs again), "
                         f"got {retries!r}")  # fmt: skip
    classes = tuple(catch) if isinstance(catch, (tuple, list)) else (catch,)
    if not all(isinstance(c, type) and issubclass(c, Exception) for c in classes):
        raise TypeError(f"catch must be an exception class (catch=ValueError) or a tuple of them, got {catch!r:.80}")
    if show_progress is not None and not isinstance(show_progress, bool):
        raise TypeError(f"show_progress must be True, False or None (a line on a terminal, log records "
                        f"otherwise), got {show_progress!r:.60}")  # fmt: skip
    return dict(n_trials=None if n_trials is None else int(n_trials),
                n_workers=None if n_workers is None else int(n_workers), catch=classes, retries=int(retries),
                timeout=_seconds("timeout", timeout, zero=True),
                trial_timeout=_seconds("trial_timeout", trial_timeout, zero=False))  # fmt: skip
