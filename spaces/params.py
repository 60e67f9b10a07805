"""Tuner-style parameter declarations (Optuna's ``suggest_*``, Ray Tune's domains) carried as ordered grids.

::

    from nas.host.study import Study
    from spaces.params import Categorical, Float, Int

    study = Study({
        "lr": Float(1e-5, 1e-1, log=True),               # 65 values: 1e-05, 1.15e-05, ..., 0.001, ..., 0.1
        "layers": Int(1, 8),                             # every integer 1 ... 8
        "opt": ["sgd", "adam"],                          # a list: categorical (unordered)
        "momentum": Float(0.0, 0.99, when={"opt": ["sgd"]}),  # 101 values, only when opt is sgd
    }, searcher="regularized_evolution", max_queries=40)

Every searcher's space is a string of categorical tokens (``spaces.base``), so a continuous range is
carried as an ordered grid (an ordinal token of ``spaces.hpo.HPOSpace``), both ends included:

- ``Float(low, high)``: ``LINEAR_INTERVALS = 100`` equal steps (101 values: every value of the range
  is within 0.5 % of the range from a grid value; 0, 0.01, ..., 1 on ``[0, 1]``).
- ``Float(low, high, log=True)``: ``LOG_INTERVALS_PER_DECADE = 16`` equal steps of the logarithm per
  decade, decades rounded up (neighbouring values differ by a factor 10^(1/16) = 1.155, so every value
  is within 7.5 % of a grid value; on a range from one power of ten to another every power of ten is
  a grid value). Four decades cost 65 values. What that costs: half a step (1/32 decade) from the
  best learning rate moved the mean validation RMSE by 0.58 +- 0.51 on ``mlp/diabetes`` and 0.09 +-
  0.04 on ``mlp/boston``, below the seed-to-seed spread of a training (1.97 and 0.15;
  ``scripts/experiments/order_aware_operators.py``).
- ``num=`` sets a parameter's number of values instead (evenly spaced on its scale); ``step=``
  (Optuna's ``suggest_float(step=)``, Ray's ``quniform``) takes ``low, low + step, ..., high``
  (``step`` must divide ``high - low``), thinned evenly to the default number of values (or ``num``)
  where there are more.
- ``Int(low, high)``: every integer where there are at most 101 of them (or ``num``), else 101 evenly
  spaced integers; ``step=`` as for floats; ``log=True``: the log grid rounded to integers (every
  integer at the low end, gaps at the high end).
- ``log=True`` with ``step=`` (Ray's ``qloguniform``, ``qlograndint``): the geometric grid rounded to
  multiples of ``step``; ``low`` and ``high`` must be multiples of ``step``.
- ``Categorical(choices)`` or a plain list: unordered choices.
- ``when={"parent": [values]}``: the parameter exists only when an earlier parameter takes one of the
  values (``spaces.hpo``'s conditions); parents come first in the dict.

Grid values are exact at both ends and readable inside (floats rounded to 6 significant digits, 12 on
a ``step``), so a value handed back to Optuna lies inside ``[low, high]`` and on its ``step``.
``trial.params`` holds Python floats for ``Float`` and Python ints for ``Int``. The space is order-aware
(``HPOSpace(..., order_aware=True)``, ``spaces.ordinal``): mutations prefer nearby grid values, local
search's neighbours are the adjacent values and a doubling ladder, and model-based searchers read an
ordinal parameter as one number on a unit axis.

**Continuous values.** A searcher that takes continuous values natively (a class attribute
``continuous_values = True``: ``tpe``, ``tpe_hyperband``, ``random_search``) gets fine grids from a ``Study``
(``declared_space(..., continuous=True)``, a ``ContinuousSpace``): a ``Float`` on ``FINE_POINTS =
2**20 + 1`` values evenly spaced on its scale (neighbours 1e-6 of the range apart: float32 resolution
on a unit axis), an ``Int`` on every integer (on its ``step``; above 2**20 + 1 of them, that many evenly
spaced), a log ``Int`` or a log ``Float`` with a ``step`` on every value where there are at most
``LOG_TABLE_POINTS = 4096``, else 4,096 geometric ones; ``num=`` keeps its grid. Every other searcher
searches today's grids, and a ``Study`` says so once, in one ``UserWarning`` naming each range that is
a grid and its resolution (``gridded``)::

    UserWarning: searcher 'regularized_evolution' searches 1 range on a grid: lr: Float(1e-05, 0.1,
    log=True) on 65 values (16 per decade); searchers random_search, tpe and tpe_hyperband take ranges
    continuously; give num= to choose a grid
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from spaces.continuous_space import ContinuousSpace
from spaces.hpo import HPOSpace, Hyperparameter, _when, categorical, grid

LINEAR_INTERVALS = 100  # default steps of a linear range (module doc)
LOG_INTERVALS_PER_DECADE = 16  # default steps per decade of a log range (module doc)
FINE_POINTS = 2**20 + 1  # a range's values for a searcher that takes continuous values (module doc)
LOG_TABLE_POINTS = 4096  # at most this many values on a geometric fine grid (a table the searcher reads)


def _number(x) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def _multiple(x: float, step: float) -> bool:
    k = x / step
    return abs(k - round(k)) <= 1e-9 * max(1.0, abs(k))


def _readable(points, digits: int) -> list[float]:
    """``points`` rounded to ``digits`` significant digits (0.001, not 0.0010000000000000002), more digits where
    that would merge neighbouring points."""
    for d in (digits, 12, 17):
        vals = [float(f"{x:.{d}g}") for x in points]
        if len(set(vals)) == len(vals):
            return vals
    return vals


def _thin(count: int, num: int) -> np.ndarray:
    """Indices of ``min(count, num)`` evenly spaced points among ``count`` (all of them where they fit)."""
    if count <= num:
        return np.arange(count)
    return np.unique(np.round(np.linspace(0, count - 1, num)).astype(np.int64))


def _check_when(what: str, when) -> None:
    if when is not None and not isinstance(when, (Mapping, tuple)):
        raise ValueError(f'{what}: when= must be a dict {{"parent": [values]}}, got {when!r}')


def _normal_when(when) -> tuple:
    """``((parent, (values, ...)), ...)``: hashable, and unchanged when it already is (``dataclasses.replace``)."""
    return when if isinstance(when, tuple) else _when(when)


@dataclasses.dataclass(frozen=True)
class _Range:
    low: Any
    high: Any
    log: bool = False
    step: Any = None
    num: int | None = None
    when: Any = None

    def __post_init__(self):
        what = repr(self)
        _check_when(what, self.when)
        object.__setattr__(self, "when", _normal_when(self.when))
        if not isinstance(self.log, (bool, np.bool_)):
            raise ValueError(f"{what}: log must be True or False")
        if not all(_number(b) and math.isfinite(b) for b in (self.low, self.high)):
            raise ValueError(f"{what}: low and high must be finite numbers")
        if not self.low < self.high:
            raise ValueError(
                f"{what}: low must be below high (a fixed value is a constant: leave it out of the space, "
                "or give a one-element list)"
            )
        if self.log and self.low <= 0:
            raise ValueError(f"{what}: a log range needs low > 0")
        if self.num is not None and (not isinstance(self.num, (int, np.integer)) or isinstance(self.num, bool)
                                     or self.num < 2):  # fmt: skip
            raise ValueError(f"{what}: num (grid points) must be an integer >= 2")
        if self.step is not None:
            if not (_number(self.step) and math.isfinite(self.step) and self.step > 0):
                raise ValueError(f"{what}: step must be a positive number")
            if self.log and not (_multiple(self.low, self.step) and _multiple(self.high, self.step)):
                raise ValueError(f"{what}: with log=True and a step, low and high must be multiples of step")
            if not self.log and not _multiple(self.high - self.low, self.step):
                raise ValueError(
                    f"{what}: step must divide high - low ({(self.high - self.low) / self.step:.4g} steps); "
                    "change high or step"
                )

    def __repr__(self) -> str:
        extra = "".join(
            f", {k}={getattr(self, k)!r}" for k in ("log", "step", "num") if getattr(self, k) not in (False, None)
        )
        return f"{type(self).__name__}({self.low!r}, {self.high!r}{extra})"

    @property
    def points(self) -> int:
        """The number of grid values (before rounding to a step or to integers merges any)."""
        if self.num is not None:
            return int(self.num)
        if not self.log:
            return LINEAR_INTERVALS + 1
        return LOG_INTERVALS_PER_DECADE * math.ceil(math.log10(self.high / self.low) - 1e-9) + 1

    def values(self) -> tuple:
        raise NotImplementedError

    def fine_values(self) -> tuple:
        """The values for a searcher that takes continuous values (module doc); ``num=`` keeps its grid."""
        raise NotImplementedError

    def domain_size(self) -> int | None:
        """How many values the declared range holds (None: a continuum)."""
        return None

    def resolution(self) -> str:
        """What the default grid is, in words: ``65 values (16 per decade)``."""
        n = len(self.values())
        size = self.domain_size()
        if size is not None:
            return f"{n} of its {size} values"
        if self.log:
            return f"{n} values ({LOG_INTERVALS_PER_DECADE} per decade)"
        return f"{n} values (steps of {(self.high - self.low) / (n - 1):.3g})"

    def is_gridded(self) -> bool:
        """The default grid leaves out values of the range (and ``num=`` did not choose it)."""
        if self.num is not None:
            return False
        size = self.domain_size()
        return size is None or len(self.values()) < size

    def hyperparameter(self, name: str, fine: bool = False) -> Hyperparameter:
        vals = self.fine_values() if fine and self.num is None else self.values()
        if len(vals) < 2 or np.any(np.diff(np.asarray(vals, np.float64)) <= 0):
            raise ValueError(f"{self!r}: the range is too narrow for distinct grid values; give fewer points (num=)")
        if fine:  # a million values: built here, checked above (grid()'s checks are per value)
            return Hyperparameter(name, tuple(vals), True, self.when, f"{self!r}: {len(vals)} values")
        h = grid(name, vals, doc=f"{self!r}: {len(vals)} grid values")
        return dataclasses.replace(h, when=self.when)


class Float(_Range):
    """A float in ``[low, high]`` (module doc): ``Float(1e-5, 1e-1, log=True)``, ``Float(0, 1, step=0.1)``."""

    def values(self) -> tuple[float, ...]:
        lo, hi, n = float(self.low), float(self.high), self.points
        if self.step is not None and self.log:
            vals = _readable(np.unique(np.round(np.geomspace(lo / self.step, hi / self.step, n))) * self.step, 12)
        elif self.step is not None:  # 12 digits keep the values on Optuna's step (it checks to 1e-8 steps)
            vals = _readable(lo + _thin(int(round((hi - lo) / self.step)) + 1, n) * self.step, 12)
        else:
            vals = _readable(np.geomspace(lo, hi, n) if self.log else np.linspace(lo, hi, n), 6)
        vals[0], vals[-1] = lo, hi  # exact ends: a value handed back lies inside [low, high]
        return tuple(vals)

    def domain_size(self) -> int | None:
        return None if self.step is None else len(self._steps())

    def _steps(self) -> np.ndarray:
        lo, hi, step = float(self.low), float(self.high), float(self.step)
        if self.log:
            return np.arange(round(lo / step), round(hi / step) + 1) * step
        return lo + np.arange(int(round((hi - lo) / step)) + 1) * step

    def fine_values(self) -> tuple[float, ...]:
        lo, hi = float(self.low), float(self.high)
        if self.step is not None:
            k = self._steps()
            limit = LOG_TABLE_POINTS if self.log else FINE_POINTS
            if len(k) > limit and self.log:
                k = np.unique(np.round(np.geomspace(lo / self.step, hi / self.step, limit))) * self.step
            elif len(k) > limit:
                k = k[_thin(len(k), limit)]
            vals = _readable(k, 12)
        else:
            vals = (np.geomspace(lo, hi, FINE_POINTS) if self.log else np.linspace(lo, hi, FINE_POINTS)).tolist()
        vals[0], vals[-1] = lo, hi
        return tuple(vals)


class Int(_Range):
    """An integer in ``[low, high]`` (module doc): ``Int(1, 8)``, ``Int(16, 4096, log=True)``, ``Int(0, 90, step=5)``"""

    def __post_init__(self):
        for b in (self.low, self.high, self.step):
            if b is not None and (not isinstance(b, (int, np.integer)) or isinstance(b, bool)):
                raise ValueError(f"Int({self.low!r}, {self.high!r}): low, high and step must be integers, got {b!r}")
        super().__post_init__()

    def values(self) -> tuple[int, ...]:
        lo, hi, step, n = int(self.low), int(self.high), int(self.step or 1), self.points
        if self.log:
            k = np.unique(np.round(np.geomspace(lo / step, hi / step, n)).astype(np.int64))
            return tuple(int(i) * step for i in k)
        return tuple(lo + int(i) * step for i in _thin((hi - lo) // step + 1, n))

    def domain_size(self) -> int:
        if self.log:
            step = int(self.step or 1)
            return int(self.high) // step - -(-int(self.low) // step) + 1
        return (int(self.high) - int(self.low)) // int(self.step or 1) + 1

    def fine_values(self) -> tuple[int, ...]:
        lo, hi, step = int(self.low), int(self.high), int(self.step or 1)
        if self.log:
            first = -(-lo // step)
            if self.domain_size() <= LOG_TABLE_POINTS:
                return tuple(int(i) * step for i in range(first, hi // step + 1))
            k = np.unique(np.round(np.geomspace(lo / step, hi / step, LOG_TABLE_POINTS)).astype(np.int64))
            return tuple(int(i) * step for i in k)
        return tuple(lo + int(i) * step for i in _thin((hi - lo) // step + 1, FINE_POINTS))


@dataclasses.dataclass(frozen=True)
class Categorical:
    """Unordered choices: ``Categorical(["relu", "tanh"], when={"opt": ["sgd"]})`` (a plain list where there
    is no condition)."""

    choices: tuple
    when: Any = None

    def __post_init__(self):
        if isinstance(self.choices, (str, bytes)) or not isinstance(self.choices, Sequence):
            raise ValueError(f"Categorical: choices must be a list of values, got {self.choices!r}")
        object.__setattr__(self, "choices", tuple(self.choices))
        _check_when(f"Categorical({list(self.choices)!r})", self.when)
        object.__setattr__(self, "when", _normal_when(self.when))

    def hyperparameter(self, name: str, fine: bool = False) -> Hyperparameter:
        del fine  # choices are what they are
        return categorical(name, self.choices, when=dict(self.when) or None)


DECLARATIONS = (Float, Int, Categorical)


def is_declared(space: Mapping) -> bool:
    """``space`` (a dict) uses a declaration (``Float``, ``Int``, ``Categorical``) for some parameter."""
    return any(isinstance(v, DECLARATIONS) for v in space.values())


def _declarations(params: Mapping[str, Any]) -> tuple:
    """``((name, Float | Int | Categorical), ...)``, each checked (a list becomes a ``Categorical``)."""
    out = []
    for key, decl in params.items():
        if not isinstance(key, str):
            raise ValueError(f"parameter names must be strings, got {key!r}")
        if isinstance(decl, (str, bytes)) or not isinstance(decl, (*DECLARATIONS, Sequence)):
            raise ValueError(f"parameter {key!r}: give Float(...), Int(...), Categorical(...) or a list, got {decl!r}")
        out.append((key, decl if isinstance(decl, DECLARATIONS) else Categorical(decl)))
    return tuple(out)


def declared_space(params: Mapping[str, Any], name: str = "study", continuous: bool = False,
                   **space_options) -> HPOSpace:  # fmt: skip
    """The order-aware ``HPOSpace`` of ``{name: Float | Int | Categorical | [values]}`` (``space_options``:
    ``mutation_scale``); ``continuous=True``: the ``ContinuousSpace`` of the fine grids (module doc), one
    object per declaration (Studies on it share their compiled programs)."""
    decls = _declarations(params)
    if continuous:
        try:
            return _continuous_space(decls, name, tuple(sorted(space_options.items())))
        except TypeError:  # a choice that does not hash (a list): built anew
            return _build(decls, name, True, space_options)
    return _build(decls, name, False, space_options)


def _build(decls: tuple, name: str, fine: bool, space_options: dict) -> HPOSpace:
    hyperparameters = []
    for key, decl in decls:
        try:
            hyperparameters.append(decl.hyperparameter(key, fine=fine))
        except ValueError as e:
            raise ValueError(f"parameter {key!r}: {e}") from None
    if not fine:
        return HPOSpace(name, hyperparameters, order_aware=True, **space_options)
    scales = tuple(None if isinstance(d, Categorical) else ("log" if d.log else "linear") for _, d in decls)
    space = ContinuousSpace(name, hyperparameters, scales, order_aware=True, **space_options)
    space.declarations = (decls, tuple(sorted(space_options.items())))  # what it is built from (declarations_key)
    return space


@functools.lru_cache(maxsize=4)  # a million-value range holds ~40 MB of values: a few spaces at once
def _continuous_space(decls: tuple, name: str, space_options: tuple) -> HPOSpace:
    return _build(decls, name, True, dict(space_options))


def gridded(params: Mapping[str, Any]) -> list[str]:
    """One line per ``Float``/``Int`` whose default grid leaves out values of its range (``num=`` unset):
    ``lr: Float(1e-05, 0.1, log=True) on 65 values (16 per decade)``."""
    return [f"{k}: {d!r} on {d.resolution()}" for k, d in _declarations(params)
            if isinstance(d, _Range) and d.is_gridded()]  # fmt: skip


@functools.lru_cache(maxsize=64)
def _shape_space(cardinalities, ordinal, conditions, order_aware, mutation_scale) -> HPOSpace:
    hps = []
    for i, (c, o, conds) in enumerate(zip(cardinalities, ordinal, conditions)):
        when = {f"h{p}": list(allowed) for p, allowed in conds} or None
        hps.append(grid(f"h{i}", list(range(c)), when=when) if o else categorical(f"h{i}", list(range(c)), when=when))
    return HPOSpace("study_shape", hps, order_aware=order_aware, mutation_scale=mutation_scale)


def _plain(value) -> bool:
    """A value whose ``repr`` is the same in every process (numbers, strings, bools, None, and tuples of them)."""
    if isinstance(value, (tuple, list)):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, (str, bytes, bool, int, float, np.generic))


def declarations_key(space: HPOSpace) -> tuple | None:
    """The declarations a ``ContinuousSpace`` of ``declared_space`` was built from, as plain values (what its
    jittable methods depend on); None for another space, or a choice whose text may differ between processes."""
    decls, options = getattr(space, "declarations", (None, None))
    if decls is None:
        return None
    out = tuple((key, type(d).__name__, dataclasses.astuple(d)) for key, d in decls)
    return (space.name, out, options) if _plain(out) and _plain(options) else None


def shape_key(space: HPOSpace) -> tuple:
    """What an ``HPOSpace``'s jittable methods depend on: cardinalities, ordinal tokens, conditions as token
    values, order-awareness and mutation scale (plain values, the same in every process)."""
    conditions = tuple(
        tuple((p, tuple(int(v) for v in np.flatnonzero(mask))) for p, mask in conds) for conds in space._conditions
    )
    return (tuple(int(c) for c in space.cardinalities), tuple(bool(o) for o in space.ordinal), conditions,
            bool(space.order_aware), float(space.mutation_scale))  # fmt: skip


def shape_space(space: HPOSpace) -> HPOSpace:
    """One ``HPOSpace`` per shape (``shape_key``): its jittable methods are those of ``space``, and searchers
    on it compare equal, so Studies share programs."""
    return _shape_space(*shape_key(space))
