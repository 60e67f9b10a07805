"""The space a ``Study`` searches, from what a user hands it.

A ``Space`` is taken as is. A dict is read the way Optuna and Ray Tune users write one: ``spaces.params``
declarations (``Float``, ``Int``, categorical lists) become an order-aware ``HPOSpace``, where a continuous
range is an ordered grid (docs/hpo.md); plain ``{name: [values]}`` becomes a ``CategoricalSpace``. Values are
checked here, before a searcher is built, so a typo fails with one line naming the hyperparameter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spaces.base import CategoricalSpace, Space
from spaces.params import declared_space, is_declared


def make_space(space: Space | dict[str, Any], name: str = "study") -> Space:
    """A Space as is; from a dict with ``spaces.params`` declarations (``{"lr": Float(1e-5, 1e-1, log=True),
    "act": ["relu", "tanh"]}``) their order-aware ``HPOSpace``; else a CategoricalSpace from ``{name: [values]}``."""
    if isinstance(space, Space):
        return space
    if not isinstance(space, dict) or not space:
        raise TypeError("space must be a Space or a non-empty dict {hyperparameter: [values, ...] | Float | Int}")
    if is_declared(space):
        return declared_space(space, name)
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


def _same(a, b) -> bool:
    try:
        return bool(a == b) and type(a) is type(b)
    except Exception:  # values that do not compare (arrays): never the same
        return False
