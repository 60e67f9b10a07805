"""``study.optimize`` with workers: W evaluations at once, results told as they arrive.

The driver (``run_trials``) fills every free worker with a trial (a pending one first: handed out
earlier and never told, e.g. before a crash; else a new ``ask``), waits for the next event and handles
it, until ``n_trials`` evaluations ran or the study has nothing left:

- ``report``: an intermediate value from a running trial, told to the study; the pruner's decision
  goes back to the worker (``trial.should_prune()``);
- ``done``: the objective returned; the value is told (NaN or infinite: a failed evaluation, with a
  warning); after a prune decision the trial is recorded as pruned, with the value returned;
- ``pruned``: the objective raised ``TrialPruned``;
- ``error``: the objective raised. An exception listed in ``catch`` marks the trial failed; any other
  stops the asking, the running trials finish and are told, then it is raised again and its trial stays
  pending (the next ``optimize`` evaluates it first), as the single-worker Study does;
- ``crash``: the worker died (killed, ``os._exit``, out of memory): only its trial is lost. It runs
  again on a fresh worker up to ``retries`` times, then is recorded as failed; the study goes on.

When the searcher has no trial now (a synchronous rung waits for its last results) the driver waits
for a running one. Backends: ``InlineWorkers`` (one evaluation at a time in this thread: the default for
one worker), ``ThreadWorkers`` (threads: for objectives that release the GIL), ``ProcessWorkers``
(``nas.host.process_workers``: fresh interpreters, no ``fork``) and ``RayWorkers``
(``nas.host.ray_workers``). Each delivers ``Event``s; the driver alone talks to the study.
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import queue
import threading
import time
import warnings
from typing import Any

from nas.host.trials import BudgetSpent, NoTrialNow, TrialPruned


@dataclasses.dataclass
class Event:
    kind: str  # "report" | "done" | "pruned" | "error" | "crash"
    number: int
    value: Any = None  # the returned or reported value, or the exception
    step: float | None = None  # a report's step
    elapsed: float | None = None  # seconds the objective ran
    reply: Any = None  # a report's way back to its worker: reply(prune: bool)


def call_objective(fn, trial, pass_trial: bool) -> Event:
    """Runs ``fn`` on ``trial`` (or a copy of its params) and says how it ended (no ``report`` events)."""
    start = time.perf_counter()
    try:
        value = fn(trial if pass_trial else copy.deepcopy(trial.params))
        return Event("done", trial.number, value, elapsed=time.perf_counter() - start)
    except TrialPruned:
        return Event("pruned", trial.number, elapsed=time.perf_counter() - start)
    except Exception as e:  # noqa: BLE001 - the driver decides (catch, or raised after the others)
        return Event("error", trial.number, e, elapsed=time.perf_counter() - start)


class InlineWorkers:
    """One evaluation at a time in the calling thread (reports go straight to the study)."""

    n_workers = 1

    def start(self, fn, pass_trial: bool) -> None:
        self.fn, self.pass_trial, self.events = fn, pass_trial, collections.deque()

    def free(self) -> bool:
        return not self.events

    def submit(self, trial) -> None:
        self.events.append(call_objective(self.fn, trial, self.pass_trial))

    def next_event(self) -> Event:
        return self.events.popleft()

    def close(self) -> None:
        pass


class ThreadWorkers:
    """``n_workers`` threads of this process (reports go straight to the study, under its lock)."""

    def __init__(self, n_workers: int):
        self.n_workers = int(n_workers)

    def start(self, fn, pass_trial: bool) -> None:
        self.fn, self.pass_trial = fn, pass_trial
        self.events: queue.Queue = queue.Queue()
        self.running = 0

    def free(self) -> bool:
        return self.running < self.n_workers

    def submit(self, trial) -> None:
        self.running += 1
        threading.Thread(target=lambda: self.events.put(call_objective(self.fn, trial, self.pass_trial)),
                         daemon=True).start()  # fmt: skip

    def next_event(self) -> Event:
        event = self.events.get()
        self.running -= 1
        return event

    def close(self) -> None:
        pass


def make_backend(backend, n_workers: int):
    """A backend object from ``backend`` (None, "inline", "thread", "process", "ray" or an object)."""
    if backend is not None and not isinstance(backend, str):
        return backend
    if backend is None:
        backend = "inline" if n_workers == 1 else "process"
    if backend == "inline":
        if n_workers != 1:
            raise ValueError(f"backend='inline' runs one evaluation at a time; n_workers={n_workers} needs "
                             "backend='process', 'thread' or 'ray'")  # fmt: skip
        return InlineWorkers()
    if backend == "thread":
        return ThreadWorkers(n_workers)
    if backend == "process":
        from nas.host.process_workers import ProcessWorkers

        return ProcessWorkers(n_workers)
    if backend == "ray":
        from nas.host.ray_workers import RayWorkers

        return RayWorkers(n_workers)
    raise ValueError(f"backend must be 'inline', 'thread', 'process', 'ray' or a workers object, got {backend!r}")


def run_trials(study, fn, n_trials: int | None, backend, catch: tuple, retries: int) -> None:
    """Runs the study's trials on ``backend`` (module docstring); ``n_trials`` None: until nothing is left."""
    backend.start(fn, study._passes_trial())
    running: dict[int, Any] = {}
    attempts: collections.Counter = collections.Counter()
    started, asking, error = 0, True, None
    try:
        while True:
            while asking and error is None and backend.free() and (n_trials is None or started < n_trials):
                try:
                    trial = study._next_trial(exclude=running)
                except NoTrialNow:
                    break  # the searcher waits for a running trial's result
                except BudgetSpent:
                    asking = False
                    break
                running[trial.number] = trial
                backend.submit(trial)
                started += 1
            if not running:
                break
            event = backend.next_event()
            if event.number not in running:  # a stale event of a trial already handled
                if event.reply is not None:
                    event.reply(True)  # a worker still waiting on it stops
                continue
            if event.kind == "report":
                prune = study.report(event.number, event.step, event.value)
                event.reply(prune)
                continue
            trial = running.pop(event.number)
            if event.kind == "crash":
                attempts[trial.number] += 1
                if attempts[trial.number] <= retries:
                    warnings.warn(f"trial {trial.number}: its worker died ({event.value}); running it again "
                                  f"(attempt {attempts[trial.number] + 1})", stacklevel=3)  # fmt: skip
                    running[trial.number] = trial
                    backend.submit(trial)
                else:
                    warnings.warn(f"trial {trial.number}: its worker died ({event.value}); recorded as a failed "
                                  "evaluation", stacklevel=3)  # fmt: skip
                    study._finish(trial, None, "failed", event.elapsed)
            elif event.kind == "error" and not isinstance(event.value, catch):
                error = error or event.value  # the trial stays pending: evaluated again by the next optimize
            else:
                try:
                    study._finish_event(trial, event)
                except (TypeError, ValueError) as e:  # a value that is not a number: raised after the others
                    error = error or e
    finally:
        backend.close()
    if error is not None:
        raise error
