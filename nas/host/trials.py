"""Trials of a host ``Study``: what an objective is handed, and how a told value is read.

A ``Trial`` carries its configuration (``params``, and the searcher's ``tokens``), and in a multi-fidelity
study its budget (``fidelity``: the index into the study's fidelities, ``budget``: its value) and, for a
promotion, the trial whose training it continues (``parent``: that trial's number). Checkpoints: every
trial has a key (``checkpoint_key``, ``"trial_00007"``) and, when the study has a directory, its own
folder ``checkpoint_dir`` (created when the trial is asked); a promotion names its parent's
(``parent_checkpoint_dir`` / ``parent_checkpoint_key``): load from there, save into your own, never
into the parent's, so a promotion that crashed can start again from an intact parent.

``trial.report(step, value)`` records an intermediate value (``step`` in the fidelity's unit: epochs,
iterations) and ``trial.should_prune()`` says whether the study's pruner stopped the trial (Optuna's
names; note the order: ``step`` first, as in Ray Tune and TensorBoard; keywords work:
``trial.report(step=3, value=0.41)``). Both go to the study that handed the trial out, also from a
worker process (``nas.host.workers.process_workers``).

A multi-objective study (``directions=[...]``, ``nas.host.objectives``) is told a list of numbers per
trial and keeps them in ``trial.values``, as Optuna does.

States: ``pending`` (handed out, not told), ``complete``, ``failed`` (the searcher saw ``-inf``), and
``pruned`` (stopped by the pruner). Nothing here imports JAX: worker processes load this module
before the objective decides what to import.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import numbers
from typing import Any

import numpy as np

STATES = ("pending", "complete", "failed", "pruned")


class TrialPruned(Exception):
    """Raised by an objective to stop a trial that ``trial.should_prune()`` stopped (Optuna's ``TrialPruned``)."""


class NoTrialNow(RuntimeError):
    """The searcher has no trial to hand out until a pending trial is told (the message says which)."""


class BudgetSpent(RuntimeError):
    """The study's budget is spent, or its searcher has no configuration left."""


def checkpoint_key(number: int) -> str:
    """The name of trial ``number``'s checkpoint: its folder under the study's directory, or a key of your store."""
    return f"trial_{int(number):05d}"


@dataclasses.dataclass(eq=False)
class Trial:
    number: int
    tokens: np.ndarray  # int32[N]
    params: Any  # space.to_spec(tokens): {name: value} for a dict space
    value: float | None = None
    values: list[float] | None = None  # a multi-objective study's values, one per direction (``value`` is None)
    state: str = "pending"  # STATES
    fidelity: int | None = None  # index into the study's fidelities (multi-fidelity studies)
    budget: float | None = None  # fidelities[fidelity]: train to this many epochs / iterations
    parent: int | None = None  # number of the trial whose training this one continues (a promotion)
    checkpoint_dir: str | None = None
    parent_checkpoint_dir: str | None = None
    cost: float | None = None  # what the evaluation spent, as told (default: its wall time in seconds)
    intermediate_values: dict = dataclasses.field(default_factory=dict)  # step -> value, as reported
    datetime_start: datetime.datetime | None = None
    datetime_complete: datetime.datetime | None = None
    _study: Any = dataclasses.field(default=None, repr=False)  # the study (or a worker's channel to it)

    @property
    def checkpoint_key(self) -> str:
        return checkpoint_key(self.number)

    @property
    def parent_checkpoint_key(self) -> str | None:
        return None if self.parent is None else checkpoint_key(self.parent)

    @property
    def duration(self) -> datetime.timedelta | None:
        if self.datetime_start is None or self.datetime_complete is None:
            return None
        return self.datetime_complete - self.datetime_start

    def report(self, step: float, value: float) -> None:
        """Records ``value`` at ``step`` (fidelity units); the study's pruner decides at its rungs."""
        if self._study is None:
            raise RuntimeError(f"trial {self.number} belongs to no study (report from the objective the study runs)")
        self._study.report(self.number, step, value)

    def should_prune(self) -> bool:
        """Whether the study's pruner stopped this trial (at the last ``report``); False without a pruner."""
        return False if self._study is None else bool(self._study.should_prune(self.number))

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_study": None}  # a pickled trial (a worker's copy) belongs to no study

    def payload(self) -> dict:
        """What a worker needs to run the trial (plain values: pickles across processes and to Ray)."""
        fields = ("number", "tokens", "params", "fidelity", "budget", "parent", "checkpoint_dir",
                  "parent_checkpoint_dir")  # fmt: skip
        return {k: getattr(self, k) for k in fields}


def is_nonfinite(value) -> bool:
    try:
        return not math.isfinite(float(value))
    except (TypeError, ValueError):
        return False  # not a number: as_value names the problem


def as_value(value, number: int) -> float | None:
    """A told value as a float (None = failed); anything but a real number or None is a clear error."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "fi":
            return float(value)
        raise TypeError(
            f"the value of trial {number} must be a real number (int or float) or None for a failed evaluation, "
            f"got {value!r} ({type(value).__name__})"
        )
    return float(value)


def read_values(value, number: int, m: int):
    """A told value as a float (one objective), a tuple of ``m`` floats, or None (failed); anything else
    is a one-line ``TypeError``."""
    if m == 1 or value is None:
        return as_value(value, number)
    vector = isinstance(value, (list, tuple)) or (isinstance(value, np.ndarray) and value.ndim == 1)
    if not vector or len(value) != m:
        raise TypeError(f"trial {number}: the study has {m} objectives: tell a list of {m} numbers, or None for a "
                        f"failed evaluation, got {value!r:.80}")  # fmt: skip
    out = tuple(as_value(v, number) for v in value)
    if any(v is None for v in out):
        raise TypeError(f"trial {number}: every one of the {m} values must be a number, got {list(value)!r:.80}; "
                        "tell None for a failed evaluation")  # fmt: skip
    return out


def report_step(step, number: int) -> float:
    """A reported step as a float: a finite real number >= 0 (epochs, iterations); anything else is one line."""
    if isinstance(step, (bool, np.bool_)) or not isinstance(step, (numbers.Real, np.floating, np.integer)):
        raise TypeError(f"report: the step of trial {number} must be a number (epochs, iterations), got {step!r:.60}")
    if not math.isfinite(float(step)) or step < 0:
        raise ValueError(f"report: the step of trial {number} must be a finite number >= 0 (epochs, iterations), "
                         f"got {step!r}")  # fmt: skip
    return float(step)


def as_cost(cost, number: int) -> float | None:
    """A told cost as a float (None: not given); a finite real number >= 0, else one line."""
    if cost is None:
        return None
    if isinstance(cost, (bool, np.bool_)) or not isinstance(cost, (numbers.Real, np.floating, np.integer)):
        raise TypeError(f"the cost of trial {number} must be a real number (what the evaluation spent) or None, "
                        f"got {cost!r:.60}")  # fmt: skip
    if not math.isfinite(float(cost)) or cost < 0:
        raise ValueError(f"the cost of trial {number} must be a finite number >= 0 (what the evaluation spent) or "
                         f"None, got {cost!r}")  # fmt: skip
    return float(cost)


def nonfinite(value) -> bool:
    """Whether a told value (a number or a sequence of numbers) holds a NaN or an infinity."""
    if isinstance(value, (list, tuple)) or (isinstance(value, np.ndarray) and value.ndim == 1):
        return any(is_nonfinite(v) for v in value)
    return is_nonfinite(value)


def now() -> datetime.datetime:
    return datetime.datetime.now()
