"""One evaluation at a time in the calling thread: ``Study.optimize``'s workers when none are asked for.

The objective runs inside ``submit``; its reports go straight to the study (``trial.report`` calls
``study.report``), so ``next_event`` only hands back how it ended.
"""

from __future__ import annotations

import collections

from nas.host.workers.events import Event, call_objective


class InlineWorkers:
    """One evaluation at a time in this thread (module docstring)."""

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
