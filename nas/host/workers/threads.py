"""Threads of this process as workers: for objectives that release the GIL (JAX, NumPy, a subprocess).

``ThreadWorkers(W)`` runs each trial in a thread of its own, at most ``W`` at once;
``ThreadWorkers(W, executor=pool)`` hands them to an executor instead (``study.optimize(fn,
executor=ThreadPoolExecutor(4))`` builds these, ``W`` the executor's ``max_workers``). The objective's
reports go straight to the study, under its lock. A trial the executor could not run (a broken
process pool, a cancelled future) is a ``crash`` of that trial only.
"""

from __future__ import annotations

import queue
import threading

from nas.host.workers.events import Event, call_objective


class ThreadWorkers:
    """At most ``n_workers`` trials at once in threads, or on ``executor`` (module docstring)."""

    def __init__(self, n_workers: int, executor=None):
        self.n_workers, self.executor = int(n_workers), executor

    def start(self, fn, pass_trial: bool) -> None:
        self.fn, self.pass_trial = fn, pass_trial
        self.events: queue.Queue = queue.Queue()
        self.running = 0

    def free(self) -> bool:
        return self.running < self.n_workers

    def submit(self, trial) -> None:
        self.running += 1
        if self.executor is None:
            run = lambda: self.events.put(call_objective(self.fn, trial, self.pass_trial))  # noqa: E731
            threading.Thread(target=run, daemon=True).start()
            return
        future = self.executor.submit(call_objective, self.fn, trial, self.pass_trial)
        future.add_done_callback(lambda f: self.events.put(_outcome(f, trial.number)))

    def next_event(self) -> Event:
        event = self.events.get()
        self.running -= 1
        return event

    def close(self) -> None:
        pass


def _outcome(future, number: int) -> Event:
    try:
        return future.result()
    except BaseException as e:  # noqa: BLE001 - the executor failed the trial, not the objective
        return Event("crash", number, f"the executor could not run it ({type(e).__name__}: {e})")
