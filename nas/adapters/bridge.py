"""A host ``Study`` whose trials are named by an outside tool's trial ids, shared by the adapters.

Optuna and Ray Tune hand out and finish trials by their own ids (an Optuna trial number, a Ray
trial id string), from several threads, in any order. ``StudyBridge`` maps those ids onto the
trials of one ``nas.host.study.Study`` (the registered searcher asked and told one batch at a
time, ``nas/host/batch_driver.py``) under a lock:

- ``propose(key)`` hands out the next configuration of the searcher's current batch, or None
  when every trial of that batch is out and not yet told (the searcher updates on whole
  batches: the caller waits, or Ray Tune asks again later);
- ``record(key, value)`` tells a value (None = failed; NaN and infinities are recorded as
  failures with a warning), and the searcher updates once its batch is told.

A configuration is handed out once: ids of the tool that were never proposed are ignored.

A bridge pickles (Ray Tune pickles its searcher, and saves it in experiment checkpoints) as its
settings plus the log of handed-out trials and told values; unpickling replays that log through
a new Study (the same seed asks the same strings, checked token by token), so the searcher's
state is rebuilt exactly. Trials that were out and not told are out again under their ids.
"""

from __future__ import annotations

import math
import threading
import warnings
from collections.abc import Hashable
from typing import Any

from nas.host.study import Study, Trial
from nas.searchers import make_options


class BudgetSpent(RuntimeError):
    """The searcher's budget (``max_queries``) is spent: no further configuration."""


class StudyBridge:
    """One Study shared by the threads of a tool; every method holds ``self.cond``."""

    def __init__(self, searcher: str, max_queries: int, seed: int, options: dict[str, Any]):
        if isinstance(max_queries, bool) or not isinstance(max_queries, int) or max_queries < 1:
            raise ValueError(f"max_queries must be a positive integer (the number of trials), got {max_queries!r}")
        make_options(searcher, max_queries=max_queries, **options)  # unknown searchers and options fail here
        self.searcher, self.max_queries, self.seed, self.options = searcher, max_queries, int(seed), dict(options)
        self.study: Study | None = None
        self.cond = threading.Condition(threading.RLock())
        self.trials: dict[Hashable, Trial] = {}
        self._setup: tuple | None = None  # (space, direction, max_queries) of the Study

    def __getstate__(self) -> dict:
        with self.cond:
            state = {k: v for k, v in self.__dict__.items() if k not in ("study", "cond", "trials")}
            keys = {id(t): k for k, t in self.trials.items()}
            trials = self.study.trials if self.study is not None else []
            state["log"] = [(keys[id(t)], t.tokens.tolist(), t.state, t.value) for t in trials]
            return state

    def __setstate__(self, state: dict) -> None:
        log = state.pop("log")
        self.__dict__.update(state)
        self.study, self.cond, self.trials = None, threading.Condition(threading.RLock()), {}
        if self._setup is not None:
            self.start(*self._setup)
        told = {key: (status, value) for key, _, status, value in log}
        for key, tokens, _, _ in log:  # replay: the same seed asks the same strings
            if self.room() == 0:
                self._replay_tells(told)  # the whole batch was told before the next one was asked
            trial = self.study.ask()
            if trial.tokens.tolist() != tokens:
                raise RuntimeError(f"replaying the searcher's log: trial {key!r} asked {trial.tokens}, saved {tokens}")
            self.trials[key] = trial
        self._replay_tells(told)

    def _replay_tells(self, told: dict) -> None:
        for key, trial in self.trials.items():
            status, value = told[key]
            if trial.state == "pending" and status != "pending":
                self.study.tell(trial, value if status == "complete" else None)

    def start(self, space: dict[str, Any], direction: str, max_queries: int | None = None) -> None:
        """Builds the Study on ``space`` (``{name: [values] | Float | Int | Categorical}``,
        ``nas.host.study_space.make_space``); ``max_queries`` defaults to the bridge's."""
        with self.cond:
            self._setup = (space, direction, max_queries)
            self.study = Study(
                space,
                searcher=self.searcher,
                direction=direction,
                seed=self.seed,
                max_trials=self.max_queries if max_queries is None else max_queries,
                **self.options,
            )

    @property
    def started(self) -> bool:
        return self.study is not None

    def room(self) -> int:
        """Trials that can be handed out now (the rest of the current batch, within the budget)."""
        return self.study._driver.room()

    def spent(self) -> bool:
        return len(self.study.trials) >= self.study.max_queries

    def propose(self, key: Hashable) -> dict[str, Any] | None:
        """The params of a new trial named ``key``; None while the current batch is out; ``BudgetSpent``."""
        with self.cond:
            if key in self.trials:
                raise ValueError(f"trial {key!r} was already proposed a configuration")
            if self.spent():
                raise BudgetSpent(
                    f"the searcher's budget of max_queries={self.study.max_queries} trials is spent; "
                    "create the adapter with a larger max_queries"
                )
            if self.room() == 0:
                return None
            trial = self.study.ask()
            self.trials[key] = trial
            return dict(trial.params)

    def pending(self) -> list[Hashable]:
        """Ids of the trials handed out and not yet told."""
        with self.cond:
            return [k for k, t in self.trials.items() if t.state == "pending"]

    def record(self, key: Hashable, value: float | None) -> bool:
        """Tells ``value`` (None = failed) for trial ``key``; False when ``key`` was never proposed."""
        with self.cond:
            trial = self.trials.get(key)
            if trial is None:
                return False
            if value is not None and not isinstance(value, bool):
                try:
                    finite = math.isfinite(float(value))
                except (TypeError, ValueError):
                    finite = True  # not a number: Study.tell names the problem
                if not finite:
                    warnings.warn(f"trial {key!r}: value {value}; recorded as a failed evaluation", stacklevel=3)
                    value = None
            self.study.tell(trial, value)
            self.cond.notify_all()
            return True
