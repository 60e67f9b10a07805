"""The space of fine grids that a Study gives a searcher taking continuous values (``spaces.params``).

A ``ContinuousSpace`` is an order-aware ``HPOSpace`` whose ranges hold up to 2**20 + 1 values each
(``spaces.params.FINE_POINTS``), with the scale of each range (``scales``) for searchers that model it
(``nas.searchers.tpe``). What differs from ``HPOSpace`` is only what a million values make slow: a token is
drawn as one integer (the same uniform distribution), and a value is found by a search of its sorted grid.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from spaces.hpo import HPOSpace


class ContinuousSpace(HPOSpace):
    """The order-aware ``HPOSpace`` of fine grids (module doc) for searchers that take continuous values.

    ``scales``: per token ``"linear"``, ``"log"`` (a range's scale: its values are evenly spaced on it where
    the grid is not a table) or None (categorical). A token of a million values is drawn as one integer
    (the same uniform distribution as ``HPOSpace``'s, without a million logits), and a value is found by a
    search of the sorted grid."""

    def __init__(self, name: str, hyperparameters, scales: tuple, **options):
        # read by value_index, which HPOSpace's conditions call
        self._grids = {h.name: np.asarray(h.values, np.float64) for h in hyperparameters if h.ordinal}
        # a float range is a continuum: any value inside it is its nearest grid value
        self._continua = {h.name for h in hyperparameters if h.ordinal and isinstance(h.values[0], float)}
        super().__init__(name, hyperparameters, **options)
        if len(scales) != self.num_tokens:
            raise ValueError(f"{name}: one scale per hyperparameter, got {len(scales)} for {self.num_tokens}")
        self.scales = tuple(scales)

    def sample_unconstrained(self, key):
        return jax.random.randint(key, (self.num_tokens,), 0, np.asarray(self.cardinalities, np.int32))

    def value_index(self, name: str, value: Any) -> int:
        grid_values = self._grids.get(name)
        number = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))
        if grid_values is None or not number:
            return super().value_index(name, value)
        i = int(np.clip(np.searchsorted(grid_values, float(value)), 1, len(grid_values) - 1))
        near = i - 1 if abs(grid_values[i - 1] - value) <= abs(grid_values[i] - value) else i
        lo, hi = grid_values[0], grid_values[-1]
        inside = lo <= value <= hi or np.isclose(grid_values[near], float(value), rtol=1e-6, atol=0.0)
        if not (inside if name in self._continua else np.isclose(grid_values[near], float(value), rtol=1e-6, atol=0)):
            raise ValueError(f"{self.name}: {name}={value!r} is not a value of its range [{lo:g}, {hi:g}]")
        return near
