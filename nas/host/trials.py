"""Trials of a host ``Study``: what an objective is handed, and how a told value is read.

The objective always gets the trial, as in Optuna. A ``Trial`` carries its configuration (``params``: the
dict the searcher chose, and its ``tokens``), its ``number``, and in a multi-fidelity study its budget
(``fidelity``: the index into the study's fidelities, ``budget``: its value) and, for a promotion, the
trial whose training it continues (``parent``: that trial's number). Checkpoints: every trial has a key
(``checkpoint_key``, ``"trial_00007"``) and, when the study has a directory, its own folder
``checkpoint_dir`` (created when the trial is asked); a promotion names its parent's
(``parent_checkpoint_dir`` / ``parent_checkpoint_key``): load from there, save into your own, never into
the parent's, so a promotion that crashed can start again from an intact parent.

**Optuna's suggest calls** read the searcher's choice: ``trial.suggest_float("lr", 1e-4, 1, log=True)``
returns ``trial.params["lr"]`` once its arguments match what the study's space declares for ``"lr"``
(``nas.Float(1e-4, 1, log=True)``); an undeclared name or other arguments are one ``ValueError`` naming
the declaration to add or fix. The space is declared up front (define-and-run: the searchers are compiled
for it), so a suggest call never adds a parameter.

**Reports.** ``trial.report(value, step)`` records an intermediate value (Optuna's order; ``step`` in the
fidelity's unit: epochs, iterations) and ``trial.should_prune()`` says whether the study's pruner stopped
the trial. Both go to the study that handed the trial out, also from a worker process
(``nas.host.workers.process_workers``). Keywords are always read as named. nasjax 0.2 took the step first;
for one release two positional numbers are read by ``report_order``, which never swaps them silently:

- Optuna's order, no warning, when the second number is an integer (``report(0.41, 3)``: Optuna's steps
  are integers);
- the old order, with a ``DeprecationWarning``, when only that reading is possible or the numbers say so:
  the second is not a step (negative, NaN, infinite) while the first is, or the first is a whole number
  and the second is not (``report(3, 0.41)``);
- else, where both readings are possible (two floats such as ``report(0.5, 2.0)``), Optuna's order with a
  ``FutureWarning`` that asks for ``step=``.

**Deprecated for one release:** an objective written for nasjax 0.2, ``def objective(params):
params["lr"]``, gets the trial and reads it like its params (``trial["lr"]``, ``keys``, ``items``,
``get``, ``in``, ``len``, ``dict(trial)``; not ``values()``: ``trial.values`` is Optuna's multi-objective
values), with one ``DeprecationWarning`` per trial naming ``trial.params[...]``.

A multi-objective study (``directions=[...]``, ``nas.host.objectives``) is told a list of numbers per
trial and keeps them in ``trial.values``, as Optuna does. ``trial.set_user_attr(key, value)`` keeps a JSON
value with the trial (``trial.user_attrs``), written with its result.

States: ``pending`` (handed out, not told), ``complete``, ``failed`` (the searcher saw ``-inf``), and
``pruned`` (stopped by the pruner). Nothing here imports JAX: worker processes load this module
before the objective decides what to import.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import numbers
import warnings
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


_UNSET = object()


@dataclasses.dataclass(eq=False)
class Trial:
    """A configuration to evaluate: what ``study.optimize`` hands the objective, and ``study.ask`` returns.

    Read its hyperparameters with ``trial.params[name]`` or Optuna's ``trial.suggest_float(name, low, high,
    log=...)``, ``suggest_int``, ``suggest_categorical(name, choices)`` (the searcher's value; the arguments
    must match the study's declared space). ``number``; ``budget`` (a multi-fidelity study: train to this many
    epochs or steps), ``parent`` and ``parent_checkpoint_dir`` (a promotion: the training it continues),
    ``checkpoint_dir`` (save here); ``report(value, step)`` and ``should_prune()`` (a pruner);
    ``set_user_attr(key, value)``. Once told: ``state``, ``value`` (``values`` with several directions),
    ``intermediate_values``, ``cost``, ``datetime_start``/``datetime_complete``, ``duration``, ``user_attrs``.
    """

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
    user_attrs: dict = dataclasses.field(default_factory=dict)  # set_user_attr's, kept with the result
    declared: dict | None = dataclasses.field(default=None, repr=False)  # plain data: nas.host.suggest.declarations
    _study: Any = dataclasses.field(default=None, repr=False)  # the study (or a worker's channel to it)
    _warned: set = dataclasses.field(default_factory=set, repr=False)  # deprecations told for this trial

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

    # -- reports ----------------------------------------------------------------------------------
    def report(self, *args, value=_UNSET, step=_UNSET) -> None:
        """``report(value, step)``: records ``value`` at ``step`` (fidelity units: epochs, iterations); the
        study's pruner decides at its rungs. Keywords are read as named; two positional numbers by
        ``report_order`` (the module docstring: nasjax 0.2's step-first order still works, with a warning)."""
        if len(args) > 2:
            raise TypeError(f"report(value, step) takes two numbers, got {len(args)} positional arguments")
        if len(args) == 2 and value is _UNSET and step is _UNSET:
            value, step = report_order(self, *args)
        else:
            named = {"value": value, "step": step}
            free = [k for k in ("value", "step") if named[k] is _UNSET]
            if len(args) > len(free):
                raise TypeError("report(value, step): a number given both by position and by keyword")
            named.update(zip(free, args))
            missing = [k for k, v in named.items() if v is _UNSET]
            if missing:
                raise TypeError(f"report(value, step): give the {' and the '.join(missing)}, e.g. "
                                "trial.report(0.41, step=3)")  # fmt: skip
            value, step = named["value"], named["step"]
        if self._study is None:
            raise RuntimeError(f"trial {self.number} belongs to no study (report from the objective the study runs)")
        self._study.report(self.number, step, value)

    def should_prune(self) -> bool:
        """Whether the study's pruner stopped this trial (at the last ``report``); False without a pruner."""
        return False if self._study is None else bool(self._study.should_prune(self.number))

    def set_user_attr(self, key: str, value) -> None:
        """Keeps ``value`` (JSON data: a number, a string, a list or dict of them) with the trial, as Optuna's;
        it is written with the trial's result and comes back from worker processes."""
        if not isinstance(key, str):
            raise TypeError(f"set_user_attr: the key must be a string, got {key!r:.60}")
        self.user_attrs[key] = value

    # -- Optuna's suggest calls: the searcher's choice, checked against the declaration -----------------
    def suggest_float(self, name: str, low: float, high: float, *, step: float | None = None,
                      log: bool = False) -> float:  # fmt: skip
        """The searcher's value of ``name``, declared ``nas.Float(low, high, step=step, log=log)``."""
        return self._suggested(name, "Float", dict(low=low, high=high, step=step, log=log))

    def suggest_int(self, name: str, low: int, high: int, *, step: int = 1, log: bool = False) -> int:
        """The searcher's value of ``name``, declared ``nas.Int(low, high, step=step, log=log)``."""
        return self._suggested(name, "Int", dict(low=low, high=high, step=step, log=log))

    def suggest_categorical(self, name: str, choices):
        """The searcher's value of ``name``, declared as the list ``choices`` (or ``nas.Categorical(choices)``)."""
        if isinstance(choices, (str, bytes)) or not hasattr(choices, "__iter__"):
            raise TypeError(f"suggest_categorical({name!r}, choices): choices must be a list, got {choices!r:.60}")
        return self._suggested(name, "Categorical", dict(choices=list(choices)))

    def _suggested(self, name: str, kind: str, args: dict):
        from nas.host.suggest import check_suggest  # the declarations' module: spaces.params

        check_suggest(self.declared, self.params, name, kind, args)
        return self.params.get(name)  # None: a conditional parameter that is inactive in this configuration

    # -- nasjax 0.2's objectives read the trial as their params (deprecated) -----------------------------
    def _as_params(self):
        if "params" not in self._warned:
            self._warned.add("params")
            warnings.warn("the objective gets the trial (as in Optuna): read trial.params[name] or "
                          "trial.suggest_float(name, ...) instead of reading the trial as its params (deprecated; "
                          "removed after nasjax 0.3)", DeprecationWarning, stacklevel=3)  # fmt: skip
        return self.params

    def __getitem__(self, key):
        return self._as_params()[key]

    def __iter__(self):
        return iter(self._as_params())

    def __len__(self) -> int:
        return len(self._as_params())

    def __contains__(self, key) -> bool:
        return key in self._as_params()

    def __bool__(self) -> bool:
        return True  # a trial is never false, whatever its params' length

    def keys(self):
        return self._as_params().keys()

    def items(self):
        return self._as_params().items()

    def get(self, key, default=None):
        return self._as_params().get(key, default)

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_study": None}  # a pickled trial (a worker's copy) belongs to no study

    def payload(self) -> dict:
        """What a worker needs to run the trial (plain values: pickles across processes and to Ray)."""
        fields = ("number", "tokens", "params", "fidelity", "budget", "parent", "checkpoint_dir",
                  "parent_checkpoint_dir", "declared")  # fmt: skip
        return {k: getattr(self, k) for k in fields}


def _step_like(x) -> bool:
    """A number that can be a report's step: real, finite, >= 0."""
    ok = isinstance(x, (numbers.Real, np.floating, np.integer)) and not isinstance(x, (bool, np.bool_))
    return ok and math.isfinite(float(x)) and x >= 0


def _whole(x) -> bool:
    ok = isinstance(x, (numbers.Real, np.floating, np.integer)) and not isinstance(x, (bool, np.bool_))
    return ok and math.isfinite(float(x)) and float(x).is_integer()


def report_order(trial: Trial, first, second) -> tuple:
    """``(value, step)`` of ``trial.report(first, second)``: Optuna's order unless the numbers say it is nasjax
    0.2's step-first order (the module docstring's rule; never a silent swap)."""
    integer = isinstance(second, (int, np.integer)) and not isinstance(second, (bool, np.bool_))
    old = not integer and _step_like(first) and (not _step_like(second) or (_whole(first) and not _whole(second)))
    if old:
        if "report" not in trial._warned:
            trial._warned.add("report")
            warnings.warn(f"trial.report({first!r}, {second!r}) is read as step={first!r}, value={second!r}, "
                          "nasjax 0.2's order (deprecated): write trial.report(value, step), Optuna's order, "
                          f"e.g. trial.report({second!r}, {first!r})", DeprecationWarning, stacklevel=3)  # fmt: skip
        return second, first
    if not integer and _step_like(first) and _step_like(second) and "ambiguous" not in trial._warned:
        trial._warned.add("ambiguous")
        warnings.warn(f"trial.report({first!r}, {second!r}) is read as value={first!r}, step={second!r} (Optuna's "
                      "order; nasjax 0.2 took the step first): write trial.report(value, step=...) to say so",
                      FutureWarning, stacklevel=3)  # fmt: skip
    return first, second


def is_nonfinite(value) -> bool:
    try:
        return not math.isfinite(float(value))
    except (TypeError, ValueError):
        return False  # not a number: as_value names the problem


def as_value(value, number: int) -> float | None:
    """A told value as a float (None = failed); anything but a real number or None is a clear error."""
    if type(value) is float or type(value) is int:  # the usual value, before the ABC checks (a bool is neither)
        return float(value)
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
    if type(value) is float:  # a read value (as_value's): the one check it needs
        return not math.isfinite(value)
    if isinstance(value, (list, tuple)) or (isinstance(value, np.ndarray) and value.ndim == 1):
        return any(is_nonfinite(v) for v in value)
    return is_nonfinite(value)


def now() -> datetime.datetime:
    return datetime.datetime.now()
