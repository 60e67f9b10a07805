"""Constrained objectives: the best score subject to ``metric <= limit`` (latency, parameters, ...).

``constrain(objective, "latency<=0.015,model_size<=0.5")`` wraps any objective that declares the
named metrics (``spaces.benchmarks.metrics``). Its ``query`` is the objective's, with the score of an
infeasible configuration (a constraint violated) replaced, so **every single-objective searcher**
(and a host study, and a peer) searches the constrained problem unchanged:

- ``mode="penalty"`` (default): Deb's feasibility rules (Deb, 2000, "An efficient constraint handling
  method for genetic algorithms", CMAME 186) as one number. An infeasible configuration scores
  ``floor - violation``: below every feasible score (``floor``, by default the table's lowest score
  minus 1), and ordered among the infeasible by the summed relative violation
  ``sum_i max(0, (metric_i - limit_i) / |limit_i|)``. Any feasible configuration beats any infeasible
  one, a smaller violation beats a larger one, and feasible ones compare by score.
- ``mode="filter"``: an infeasible configuration is a failed evaluation (``-inf``), the "death
  penalty".

Why the penalty is the default: a filter tells a searcher nothing about where the feasible region
is. Where it is small, evolution's tournaments and local search's moves then compare ``-inf`` with
``-inf`` and walk at random until something feasible turns up; the penalty's violation term leads
them into the feasible region (``docs/research/multiobjective.md`` measures both). Within the feasible region
the two are identical.

The test score of an infeasible configuration is ``-inf`` in both modes, so the reported incumbent
(the best score so far, ``nas.engine.incumbent``) is always feasible, and a run that has found
nothing feasible has no incumbent (reports say how many trials had one). Metrics pass through
unchanged (the history records them where the run names them).
"""

from __future__ import annotations

import re
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from spaces.benchmarks.metrics import metric

MODES = ("penalty", "filter")
_CONSTRAINT = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*<=\s*([-+0-9.eE]+)\s*$")


def parse_constraints(text: str) -> tuple[tuple[str, float], ...]:
    """``"latency<=0.015,model_size<=0.5"`` -> ``(("latency", 0.015), ("model_size", 0.5))``, or a ``ValueError``."""
    out = []
    for part in [p for p in str(text).split(",") if p.strip()]:
        m = _CONSTRAINT.match(part)
        try:
            limit = float(m.group(2)) if m else None
        except ValueError:
            limit = None
        if limit is None or not np.isfinite(limit):
            raise ValueError(
                f"constraint {part.strip()!r} is not '<metric><=<number>' "
                "(e.g. 'latency<=0.015'; several: comma-separated)"
            )
        out.append((m.group(1), limit))
    if not out:
        raise ValueError("constraints is empty: give '<metric><=<number>', e.g. 'latency<=0.015'")
    if len({n for n, _ in out}) != len(out):
        raise ValueError(f"constraints {text!r} limit one metric twice")
    return tuple(out)


def violation(values: dict, constraints: tuple[tuple[str, float], ...]) -> jax.Array:
    """f32[B]: the summed relative violation ``sum_i max(0, (m_i - L_i) / |L_i|)`` (0: feasible; NaN metric: inf)."""
    total = 0.0
    for name, limit in constraints:
        v = jnp.asarray(values[name], jnp.float32)
        over = jnp.maximum(v - limit, 0.0) / max(abs(limit), 1e-12)
        total = total + jnp.where(jnp.isnan(v), jnp.inf, over)
    return total


def constrained_score(valid, viol, mode: str, floor: float) -> jax.Array:
    """The score a searcher sees (module docstring): ``valid`` where feasible, else ``floor - viol`` (penalty)
    or ``-inf`` (filter); a failed evaluation stays ``-inf``."""
    valid = jnp.asarray(valid, jnp.float32)
    feasible = viol <= 0.0
    if mode == "filter":
        return jnp.where(feasible, valid, -jnp.inf)
    return jnp.where(feasible, valid, jnp.where(jnp.isfinite(valid) & jnp.isfinite(viol), floor - viol, -jnp.inf))


@struct.dataclass
class ConstrainedObjective:
    """``base`` with constraints on its metrics (module docstring); every other attribute is ``base``'s."""

    base: Any
    constraints: tuple = struct.field(pytree_node=False)  # ((metric, limit), ...)
    mode: str = struct.field(pytree_node=False, default="penalty")
    floor: float = struct.field(pytree_node=False, default=0.0)

    def __getattr__(self, name):  # the objective contract's other attributes: the base objective's
        if name.startswith("__") or name in ("base", "constraints", "mode", "floor"):
            raise AttributeError(name)
        return getattr(self.base, name)

    @property
    def name(self) -> str:
        return self.base.name

    def describe(self) -> str:
        return ", ".join(f"{n} <= {lim:g}" for n, lim in self.constraints)

    def query(self, key, tokens, fidelity=None) -> dict:
        res = self.base.query(key, tokens) if fidelity is None else self.base.query(key, tokens, fidelity)
        viol = violation(res, self.constraints)
        return {
            **res,
            "valid": constrained_score(res["valid"], viol, self.mode, self.floor),
            "test": jnp.where(viol <= 0.0, res["test"], -jnp.inf),
        }

    def best_valid(self) -> dict | None:
        """The best feasible seed-mean validation entry of a table and its test score (None: unknown)."""
        if not hasattr(self.base, "mean_valid") or not hasattr(self.base, "columns"):
            return None
        viol = np.asarray(violation(self.base.columns, self.constraints))
        mv = np.where(viol <= 0, np.asarray(self.base.mean_valid()), -np.inf)
        if not np.isfinite(mv).any():
            return None
        i = int(np.argmax(mv))
        test = float(np.asarray(self.base.test)[i]) if self.base.has_test else None
        return {"best_valid": float(mv[i]), "test_of_best_valid": test, "best_valid_report": float(self.report(mv[i]))}


def constrain(objective, constraints, mode: str = "penalty", floor: float | None = None) -> ConstrainedObjective:
    """``objective`` under ``constraints`` (a string for ``parse_constraints`` or ``((metric, limit), ...)``).

    ``floor`` (penalty mode): a score below every feasible score; default the table's lowest finite
    validation score minus 1 (objectives without a table must give it)."""
    if mode not in MODES:
        raise ValueError(f"constraint mode must be one of {MODES}, got {mode!r}")
    cons = parse_constraints(constraints) if isinstance(constraints, str) else tuple(
        (str(n), float(v)) for n, v in constraints
    )
    for n, _ in cons:
        metric(objective, n)  # a ValueError naming the metrics the objective has
    if floor is None:
        if mode == "filter":
            floor = 0.0
        elif hasattr(objective, "valid"):  # every fidelity's table (a multi-fidelity table's levels)
            v = np.concatenate([np.ravel(lvl.valid) for lvl in getattr(objective, "levels", (objective,))])
            floor = float(np.min(v[np.isfinite(v)])) - 1.0
        else:
            raise ValueError(
                f"{objective.name}: the penalty needs floor=, a score below every feasible score (it is not a table)"
            )
    return ConstrainedObjective(base=objective, constraints=cons, mode=mode, floor=float(floor))
