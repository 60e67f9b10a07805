"""A host study's objectives: one value per trial (``direction``) or several (``directions``), as in Optuna.

``Study(space, "nsga2", directions=["minimize", "minimize"])`` makes a multi-objective study, as
``optuna.create_study(directions=[...])`` does: the objective returns a list or tuple of ``M`` numbers (or
None for a failed evaluation), a trial keeps them in ``trial.values``, and ``study.best_trials`` is the
Pareto front of the completed trials. The searcher must be a multi-objective one
(``nas.core.multi_objective``: its ``num_objectives`` is set to ``M``); it is told the row
``[+-v_0, ..., +-v_{M-1}]`` (each value negated where it is minimized, as ``nas.engine.runner`` tells the
compiled runs ``[valid, -latency, ...]``), and ``-inf`` throughout for a failed trial. So a study on a
table proposes exactly the strings of the compiled runner with the same seed.

One objective (``direction``, or ``directions`` of length one) keeps ``trial.value``; nothing in such a
study changes. Pruning reads one value per step, so a multi-objective study takes no pruner (Optuna's
``Trial.report`` refuses multi-objective studies too).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from nas.core import pareto
from nas.core.multi_objective import MultiObjectiveOptions
from nas.searchers import available_searchers, searcher_class
from spaces.benchmarks.metrics import DIRECTIONS


def multi_objective_searchers() -> list[str]:
    """The multi-objective searchers a Study with directions= runs (the single-fidelity ones: MO-ASHA runs in the
    compiled runner)."""
    return [n for n in available_searchers() if is_multi_objective(n)]


def is_multi_objective(searcher) -> bool:
    """Whether ``searcher`` (a registered name or a searcher object) optimizes several objectives."""
    cls = searcher_class(searcher) if isinstance(searcher, str) else type(searcher)
    return issubclass(cls.Options, MultiObjectiveOptions)


def resolve_directions(direction, directions, searcher: str, kwargs: dict) -> tuple[str, ...]:
    """The study's directions, one per objective, checked against ``searcher`` (its ``num_objectives`` in
    ``kwargs`` is set to their number); each mistake is a one-line ``ValueError`` that names the fix."""
    if direction is not None and directions is not None:
        raise ValueError("give direction= (one objective) or directions= (one per objective), not both")
    if directions is None:
        out = ("minimize" if direction is None else direction,)
    elif isinstance(directions, (str, bytes)) or not isinstance(directions, Sequence) or not directions:
        raise ValueError(f"directions must be a non-empty list such as ['minimize', 'maximize'], got {directions!r}")
    else:
        out = tuple(directions)
    for d in out:
        if d not in DIRECTIONS:
            name = "direction" if directions is None else "directions"
            raise ValueError(f"{name}: each must be 'minimize' or 'maximize', got {d!r}")
    mo = is_multi_objective(searcher)
    if len(out) > 1 and not mo:
        raise ValueError(f"{searcher!r} optimizes one objective; for {len(out)} directions choose a multi-objective "
                         f"searcher: {multi_objective_searchers()}")  # fmt: skip
    if len(out) == 1 and mo:
        raise ValueError(f"{searcher!r} optimizes several objectives: give directions=[...], one per value the "
                         "objective returns, e.g. directions=['minimize', 'minimize']")  # fmt: skip
    if mo:
        given = kwargs.get("num_objectives", len(out))
        if given != len(out):
            raise ValueError(f"num_objectives={given!r} does not match the {len(out)} directions; leave it out")
        kwargs["num_objectives"] = len(out)
    return out


def told_row(values, directions: tuple[str, ...]) -> np.ndarray:
    """What a multi-objective searcher is told for one trial: f32[M], every column to maximize
    (``-inf`` throughout for a failed trial, ``values`` None)."""
    if values is None:
        return np.full((len(directions),), -np.inf, np.float32)
    signs = np.asarray([1.0 if d == "maximize" else -1.0 for d in directions])
    return (signs * np.asarray(values, np.float64)).astype(np.float32)


def pareto_front(trials: list, directions: tuple[str, ...]) -> list:
    """The trials no other one dominates (as good in every objective, better in one), in trial order:
    Optuna's ``study.best_trials``. ``trials``: completed trials with ``values``."""
    if not trials:
        return []
    loss = -np.stack([told_row(t.values, directions) for t in trials])  # [n, M], minimized
    dominated = np.asarray(pareto.dominance_matrix(loss, np.ones(len(trials), bool))).any(axis=0)
    return [t for t, d in zip(trials, dominated) if not d]
