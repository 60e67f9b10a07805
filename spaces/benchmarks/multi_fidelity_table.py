"""Tables with fidelities: one ``TabularBenchmark`` per budget, queried by the fidelity of each row.

``MultiFidelityTable(levels, fidelities, fidelity_unit)`` holds one table per fidelity, lowest
first (e.g. NAS-Bench-201 after 12 and after 200 epochs). It is the objective contract with
fidelities (``spaces.benchmarks.objective``):

    res = table.query(key, tokens)                 # every row at the top fidelity: the full table
    res = table.query(key, tokens, fidelity)       # fidelity int32[B]: index into ``fidelities``

Everything a single-fidelity reader needs (``space``, ``valid``, ``test``, ``cost``, ``report``,
``best_valid``, ...) is the top fidelity's, so a searcher or report that ignores fidelities sees
exactly the full table, with the same numbers. Each level keeps its own seeds, test split and
costs; a string a lower level does not hold scores ``-inf`` there. A fidelity index outside
``[0, F)`` is a failed evaluation (``-inf``, cost 0), never a crash.

The levels of a table are separate trainings (each budget with its own schedule), so by default
a higher fidelity does not continue a lower one (``continues=False``: a promotion pays its full
cost); a table built from one training's learning curve may say ``continues=True``.

A level is any single-fidelity table: an objective with a table's arrays and methods
(``TABLE_ATTRIBUTES``), in practice a ``spaces.benchmarks.tabular.TabularBenchmark``. This module
imports no table class, so ``TabularBenchmark.build`` and ``from_dict`` stack their levels here.
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from spaces.benchmarks.objective import Objective, check_fidelities

# what this class reads of each level (the arrays and methods of a single-fidelity table)
TABLE_ATTRIBUTES = (
    "space", "protocol", "report_kind", "has_test", "valid", "test", "cost", "n_seeds", "row_ids", "columns",
    "metric_info", "cost_unit", "query", "rows", "mean_valid", "best_valid", "with_protocol",
)  # fmt: skip


def is_table(level) -> bool:
    """Whether ``level`` is a single-fidelity table (a level of a ``MultiFidelityTable``)."""
    return (
        isinstance(level, Objective)
        and not isinstance(level, MultiFidelityTable)
        and all(hasattr(level, a) for a in TABLE_ATTRIBUTES)
    )


@struct.dataclass
class MultiFidelityTable(Objective):
    levels: tuple  # TabularBenchmark per fidelity, lowest budget first (pytree leaves: their arrays)
    name: str = struct.field(pytree_node=False)
    fidelities: tuple = struct.field(pytree_node=False)  # increasing budgets, one per level
    fidelity_unit: str = struct.field(pytree_node=False)
    continues: bool = struct.field(pytree_node=False, default=False)

    @classmethod
    def stack(cls, name: str, levels, fidelities, fidelity_unit: str, continues: bool = False) -> MultiFidelityTable:
        """Checks that the levels are tables of one space with one report, one per fidelity."""
        levels = tuple(levels)
        budgets = check_fidelities(name, fidelities, fidelity_unit)
        if len(levels) != len(budgets):
            raise ValueError(f"{name}: {len(levels)} tables for {len(budgets)} fidelities {budgets}")
        top = levels[-1]
        for lvl, b in zip(levels, budgets):
            if not is_table(lvl):
                raise TypeError(
                    f"{name}: the level at {b:g} {fidelity_unit} is {type(lvl).__name__}, not a single-fidelity "
                    "table (a TabularBenchmark)"
                )
            if lvl.space is not top.space or lvl.report_kind != top.report_kind or lvl.protocol != top.protocol:
                raise ValueError(
                    f"{name}: every level needs the same space, report_kind and protocol as the top one "
                    f"(the level at {b:g} {fidelity_unit} has {lvl.space.name}, {lvl.report_kind}, {lvl.protocol})"
                )
        return cls(levels=levels, name=name, fidelities=budgets, fidelity_unit=fidelity_unit, continues=continues)

    @property
    def cost_unit(self) -> str:
        return self.levels[-1].cost_unit

    # -- the top fidelity is the table a single-fidelity reader sees ------------------------
    @property
    def top(self) -> Objective:
        """The table of the top fidelity (a ``TabularBenchmark``)."""
        return self.levels[-1]

    space = property(lambda self: self.top.space)
    protocol = property(lambda self: self.top.protocol)
    has_test = property(lambda self: self.top.has_test)
    report_kind = property(lambda self: self.top.report_kind)
    valid = property(lambda self: self.top.valid)
    test = property(lambda self: self.top.test)
    cost = property(lambda self: self.top.cost)
    n_seeds = property(lambda self: self.top.n_seeds)
    row_ids = property(lambda self: self.top.row_ids)
    size = property(lambda self: self.top.size)
    num_seeds = property(lambda self: self.top.num_seeds)
    metric_info = property(lambda self: self.top.metric_info)
    columns = property(lambda self: self.top.columns)

    def rows(self, tokens: jax.Array) -> jax.Array:
        return self.top.rows(tokens)

    def mean_valid(self) -> jax.Array:
        return self.top.mean_valid()

    def best_valid(self):
        return self.top.best_valid()

    def with_protocol(self, protocol: str) -> MultiFidelityTable:
        return self.replace(levels=tuple(lvl.with_protocol(protocol) for lvl in self.levels))

    def level(self, fidelity: int) -> Objective:
        """The single-fidelity table of fidelity index ``fidelity`` (e.g. to report the low fidelity alone)."""
        return self.levels[fidelity]

    # -- the objective ------------------------------------------------------------------
    def query(self, key: jax.Array, tokens: jax.Array, fidelity: jax.Array | None = None) -> dict[str, jax.Array]:
        """``tokens[B, N]`` at ``fidelity`` (int32[B] indices, None = top) -> ``{"valid", "test", "cost"}``."""
        if fidelity is None:
            return self.top.query(key, tokens)
        fidelity = jnp.broadcast_to(jnp.asarray(fidelity, jnp.int32), tokens.shape[:1])
        per_level = [lvl.query(key, tokens) for lvl in self.levels]
        fill = {"valid": -jnp.inf, "test": -jnp.inf, "cost": 0.0, **{k: jnp.nan for k in self.top.columns}}
        return {
            k: jnp.select([fidelity == i for i in range(len(self.levels))], [r[k] for r in per_level], fill[k])
            for k in fill
        }


# -- how well a lower fidelity ranks what the top one ranks -----------------------------------
def rank_correlations(a: np.ndarray, b: np.ndarray) -> dict:
    """Spearman and Kendall (tau-b) of the pairs where both scores are finite; ``n`` pairs, ``left_out`` others."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    ok = np.isfinite(a) & np.isfinite(b)
    from scipy import stats  # scikit-learn's dependency; only the correlation reports need it

    rho = stats.spearmanr(a[ok], b[ok]).statistic
    tau = stats.kendalltau(a[ok], b[ok]).statistic
    return {"spearman": float(rho), "kendall": float(tau), "n": int(ok.sum()), "left_out": int((~ok).sum())}


def level_scores(level, split: str) -> tuple[np.ndarray, np.ndarray]:
    """(row ids, seed-mean validation or test score) of one fidelity's table."""
    score = np.asarray(level.mean_valid() if split == "valid" else level.test)
    ids = np.asarray(level.row_ids) if level.row_ids.shape[0] else np.arange(level.size)
    return ids, score


def table_pairs(table) -> list[dict]:
    """Rank correlations of every pair of fidelities of a ``MultiFidelityTable``, matched by string id."""
    out = []
    for split in ("valid", "test") if table.has_test else ("valid",):
        for lo, hi in itertools.combinations(range(len(table.fidelities)), 2):
            ids_a, a = level_scores(table.level(lo), split)
            ids_b, b = level_scores(table.level(hi), split)
            _, ia, ib = np.intersect1d(ids_a, ids_b, return_indices=True)
            pair = (table.fidelities[lo], table.fidelities[hi])
            out.append({"split": split, "pair": pair, **rank_correlations(a[ia], b[ib])})
    return out
