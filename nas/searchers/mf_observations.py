"""Deprecated: this module's names now live by what each is.

- ``draw_new``, ``draw_candidate``: ``nas.core.unseen_draw`` (uniform draws among the strings not queried);
- ``Observations``, ``observations_init``, ``observe``: ``nas.searchers.observations``;
- ``run_if``, ``first_true``, ``first_max``: ``nas.core.vmap_ops``.

This module re-exports them for one release and warns on import.
"""

from __future__ import annotations

import warnings

from nas.core.unseen_draw import draw_candidate, draw_new
from nas.core.vmap_ops import first_max, first_true, run_if
from nas.searchers.observations import Observations, observations_init, observe
from spaces.moved import REMOVED_IN

__all__ = ["Observations", "draw_candidate", "draw_new", "first_max", "first_true", "observations_init", "observe",
           "run_if"]  # fmt: skip

warnings.warn(
    "nas.searchers.mf_observations is split: import draw_new and draw_candidate from nas.core.unseen_draw, "
    "Observations, observations_init and observe from nas.searchers.observations, and run_if, first_true and "
    f"first_max from nas.core.vmap_ops (the old path goes in nasjax {REMOVED_IN})",
    DeprecationWarning,
    stacklevel=2,
)
