"""The space a ``Study`` searches, from what a user hands it.

A ``Space`` is taken as is. A dict is read the way Optuna and Ray Tune users write one: ``spaces.params``
declarations (``Float``, ``Int``, categorical lists) become an order-aware ``HPOSpace``, where a range is
an ordered grid: a fine one (effectively continuous) for a searcher that takes continuous values
(``continuous_values``: ``tpe``, ``random_search``), else the default grid, which the study says once in a
``UserWarning`` naming each gridded range and its resolution (``spaces.params``); plain ``{name: [values]}``
becomes a ``CategoricalSpace``. Values are checked here, before a searcher is built, so a typo fails with
one line naming the hyperparameter.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any

from spaces.base import CategoricalSpace, Space
from spaces.params import declared_space, gridded, is_declared

# the built-in searchers whose class says ``continuous_values = True`` (named in the warning without importing
# every searcher module; tests/test_tpe_searcher.py checks it against the classes)
CONTINUOUS_SEARCHERS = ("random_search", "tpe", "tpe_hyperband")


def takes_continuous_values(searcher) -> bool:
    """Whether ``searcher`` (a registered name or a searcher object) searches ranges continuously."""
    if not isinstance(searcher, str):
        return False  # a searcher object is built on its space already: the default grids
    from nas.searchers import searcher_class  # the registry, read when a Study is made (no import cycle)

    try:
        return bool(getattr(searcher_class(searcher), "continuous_values", False))
    except ValueError:  # an unknown name: the Study's driver says so in its own line
        return False


def resolve_ranges(searcher, ranges: str | None) -> str:
    """How a study searches its declared ranges: ``"continuous"`` (fine grids: ``spaces.continuous_space``) or
    ``"grid"`` (the default grids). ``ranges=None`` chooses by the searcher (``continuous_values``); a study
    file records the choice, so a study resumes on the grid it started on (a file written before nasjax 0.3
    searched every range on the default grid)."""
    if ranges is None:
        return "continuous" if takes_continuous_values(searcher) else "grid"
    if ranges == "continuous" and not takes_continuous_values(searcher):
        raise ValueError(f"ranges='continuous': {searcher!r} searches grids; give ranges='grid', or a searcher that "
                         f"takes ranges continuously ({', '.join(CONTINUOUS_SEARCHERS)})")  # fmt: skip
    if ranges not in ("continuous", "grid"):
        raise ValueError(f"ranges must be 'continuous', 'grid' or None (the searcher's way), got {ranges!r}")
    return ranges


def make_space(space: Space | dict[str, Any], name: str = "study", searcher=None, warn: bool = True,
               ranges: str | None = None) -> Space:
    """A Space as is; from a dict with ``spaces.params`` declarations (``{"lr": Float(1e-5, 1e-1, log=True),
    "act": ["relu", "tanh"]}``) their order-aware ``HPOSpace`` (fine grids for a ``searcher`` that takes
    continuous values, unless ``ranges="grid"``: ``resolve_ranges``; a grid chosen for the searcher, not by
    ``ranges=``, says so in one ``UserWarning`` naming the gridded ranges, unless ``warn`` is False); else a
    CategoricalSpace from ``{name: [values]}``."""
    if isinstance(space, Space):
        return space
    if not isinstance(space, dict) or not space:
        raise TypeError("space must be a Space or a non-empty dict {hyperparameter: [values, ...] | Float | Int}")
    if is_declared(space):
        if resolve_ranges(searcher, ranges) == "continuous":
            return declared_space(space, name, continuous=True)
        built = declared_space(space, name)
        lines = gridded(space) if searcher is not None and warn and ranges is None else []
        if lines:
            who = f"searcher {searcher!r}" if isinstance(searcher, str) else type(searcher).__name__
            many = f"{len(lines)} range{'s' if len(lines) > 1 else ''}"
            takers = f"{', '.join(CONTINUOUS_SEARCHERS[:-1])} and {CONTINUOUS_SEARCHERS[-1]}"
            message = (f"{who} searches {many} on a grid: {'; '.join(lines)}; searchers {takers} take ranges "
                       "continuously; give num= to choose a grid")  # fmt: skip
            warnings.warn(message, UserWarning, stacklevel=_caller_level())
        return built
    for k, v in space.items():
        if isinstance(v, (str, bytes)) or not isinstance(v, Sequence) or len(v) == 0:
            raise ValueError(f"hyperparameter {k!r}: give a non-empty list of values, got {v!r}")
        seen = []
        for x in v:
            if any(_same(x, y) for y in seen):
                raise ValueError(
                    f"hyperparameter {k!r}: value {x!r} is listed twice in {list(v)}; list each value once"
                )
            seen.append(x)
    return CategoricalSpace(name, space)


def _caller_level() -> int:
    """The ``stacklevel`` of the first frame outside the ``nas`` package: the user's line that made the study."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package + os.sep):
        frame, level = frame.f_back, level + 1
    return level


def _same(a, b) -> bool:
    try:
        return bool(a == b) and type(a) is type(b)
    except Exception:  # values that do not compare (arrays): never the same
        return False
