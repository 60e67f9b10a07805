"""Tabular benchmarks as device arrays: the objective contract for tables.

``TabularBenchmark`` is a pytree: the table arrays are leaves (so a large
table such as NAS-Bench-101 is passed to compiled code as an argument instead
of being baked into the program as a constant), the space, name and protocol
are static. ``query(key, tokens[B, N])`` is a string-id computation plus a
gather, fully jittable.

Score convention (``spaces.benchmarks.objective``): scores are "higher is better" inside searchers.
Each table states how a score converts to the reported metric (``report``):
accuracy in percent reports ``100 - acc`` (error, %), HPOLib's validation MSE is
searched as ``-log(mse)`` because it is heavy-tailed (3e-5 .. 7e3) and reported
as MSE.

Protocols (``spaces.benchmarks.protocols``): ``"mean"`` gives the seed mean of the
validation score; ``"random"`` draws one seed per query from ``key`` (the seeds a row
has; tables where some rows have fewer seeds store ``n_seeds``) and reports the seed-mean
test score; ``"random_run"`` reports the drawn seed's own test score (tables with per-run
test scores, or without a test split).

Invalid strings (``space.is_valid`` false, or a string the table does not
hold) never crash and never return a number that looks real: their valid and
test scores are ``-inf`` and their cost is 0.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from spaces.base import Space
from spaces.benchmarks.metrics import check_columns, metric_infos
from spaces.benchmarks.multi_fidelity_table import MultiFidelityTable
from spaces.benchmarks.objective import REPORTS, Objective, check_fidelities
from spaces.benchmarks.protocols import check_protocol, check_runs_for, padded_runs, split_test


@struct.dataclass
class TabularBenchmark(Objective):
    valid: jax.Array  # f32[R, S]: validation score of each seed (higher is better)
    n_seeds: jax.Array  # int32[R]: how many of the S columns are real for each row
    test: jax.Array  # f32[R]: seed-mean test score (or seed-mean validation if no test)
    test_runs: jax.Array  # f32[R, S]: each run's test score ([R, 0]: the table has seed means only)
    cost: jax.Array  # f32[R]: training time (seconds)
    row_ids: jax.Array  # int32[R] sorted string ids; empty when rows are dense ids
    space: Space = struct.field(pytree_node=False)
    name: str = struct.field(pytree_node=False)
    protocol: str = struct.field(pytree_node=False, default="mean")
    has_test: bool = struct.field(pytree_node=False, default=True)
    report_kind: str = struct.field(pytree_node=False, default="acc_pct")
    columns: dict = struct.field(default_factory=dict)  # metric name -> f32[R] (spaces.benchmarks.metrics)
    metric_info: tuple = struct.field(pytree_node=False, default=())  # a Metric per column, in order
    cost_unit: str = struct.field(pytree_node=False, default="")  # what ``cost`` counts, e.g. "s"

    @classmethod
    def build(
        cls,
        *,
        name: str,
        space: Space,
        valid: np.ndarray,
        cost: np.ndarray | None = None,
        test: np.ndarray | None = None,
        strings: np.ndarray | None = None,
        string_ids: np.ndarray | None = None,
        row_ids: np.ndarray | None = None,
        dense: bool = False,
        protocol: str = "mean",
        report_kind: str = "acc_pct",
        fidelities=None,
        fidelity_unit: str = "",
        metrics: dict | None = None,
        metric_info=(),
        cost_unit: str = "",
    ) -> TabularBenchmark:
        """Validates host arrays and moves them to the device.

        ``valid`` is f32[R, S] (or f32[R]) with NaN where a row has fewer seeds;
        NaN seeds must come last in a row. ``test`` is f32[R] (seed means) or
        f32[R, S] (each run's test score, NaN where ``valid`` is: the ``random_run``
        protocol reads it). Say which string each row holds, in any order, with
        exactly one of:

        - ``strings``: int[R, N] token strings (rows are sorted by
          ``space.string_id`` here, so the given order cannot be wrong);
        - ``string_ids``: int[R] ``space.string_id`` of each row, any order;
        - ``row_ids``: int[R] strictly increasing string ids (loaders);
        - ``dense=True``: row ``r`` is the string with ``string_id == r``.

        ``cost`` (f32[R], e.g. training seconds: ``cost_unit="s"``) is optional: zeros when absent.

        ``metrics`` (``{name: f32[R]}``, finite) are named metrics the query returns beside the scores
        (``spaces.benchmarks.metrics``); ``metric_info`` declares each one (a ``Metric``, or a tuple
        ``(name, unit[, direction])``).

        With ``fidelities`` (increasing budgets in ``fidelity_unit``, e.g. ``(12, 200)`` epochs) every
        array has a leading fidelity axis, one value per fidelity (``valid`` f32[F, R, S] or f32[F, R],
        ``test`` and ``cost`` f32[F, R]), and the result is a
        ``spaces.benchmarks.multi_fidelity_table.MultiFidelityTable`` (one table per fidelity).
        """
        if fidelities is not None:
            return _build_levels(
                cls, name=name, space=space, valid=valid, cost=cost, test=test, fidelities=fidelities,
                fidelity_unit=fidelity_unit, rows=dict(strings=strings, string_ids=string_ids, row_ids=row_ids,
                dense=dense), protocol=protocol, report_kind=report_kind, cost_unit=cost_unit, metrics=metrics,
                metric_info=metric_info,
            )  # fmt: skip
        given = [x is not None for x in (strings, string_ids, row_ids)] + [dense]
        if sum(given) != 1:
            raise ValueError(
                f"{name}: say which string each row holds with exactly one of strings= (tokens[R, N]), "
                "string_ids= (int[R]), row_ids= (sorted int[R]) or dense=True"
            )
        valid = np.asarray(valid, np.float32)
        if valid.ndim not in (1, 2) or valid.shape[0] == 0 or valid.size == 0:
            raise ValueError(f"{name}: valid must be f32[R] or f32[R, S] with one row or more, got shape {valid.shape}")
        num_rows = valid.shape[0]
        cost = np.zeros((num_rows,), np.float32) if cost is None else np.asarray(cost, np.float32)
        metric_info = metric_infos(metric_info)
        columns = check_columns(name, metrics or {}, metric_info, num_rows)
        for arr, what in ((cost, "cost"), (None if np.ndim(test) == 2 else test, "test")):
            if arr is not None and np.shape(arr) != (num_rows,):
                raise ValueError(f"{name}: {what} must have one value per row ({num_rows}), got shape {np.shape(arr)}")
        # NaN marks a seed a row lacks; an infinite score would be a fake best (or worst) row every searcher meets
        for arr, what, ok in ((valid, "valid", ~np.isinf(valid)), (cost, "cost", np.isfinite(cost) & (cost >= 0))):
            if not ok.all():
                at = tuple(int(i) for i in np.argwhere(~ok)[0])
                raise ValueError(
                    f"{name}: {what}{list(at)} = {float(arr[at])} is not a finite "
                    + ("score (NaN marks a missing seed)" if what == "valid" else "cost >= 0")
                )
        if strings is not None:
            strings = np.asarray(strings)
            if strings.ndim != 2 or strings.shape[1] != space.num_tokens:
                raise ValueError(f"{name}: strings must be int[R, {space.num_tokens}], got shape {strings.shape}")
            string_ids = np.asarray(jax.jit(jax.vmap(space.string_id))(jnp.asarray(strings, jnp.int32)))
            if np.any(string_ids < 0):
                bad = strings[int(np.argmax(string_ids < 0))].tolist()
                raise ValueError(
                    f"{name}: row {int(np.argmax(string_ids < 0))} holds invalid string {bad} for {space.name}"
                )
        if string_ids is not None:
            string_ids = np.asarray(string_ids, np.int64)
            if string_ids.shape != (num_rows,):
                raise ValueError(f"{name}: need one string id per row ({num_rows}), got shape {string_ids.shape}")
            order = np.argsort(string_ids, kind="stable")
            sorted_ids = string_ids[order]
            dup = np.nonzero(np.diff(sorted_ids) == 0)[0]
            if dup.size:
                rows_ = np.nonzero(string_ids == sorted_ids[dup[0]])[0].tolist()
                raise ValueError(
                    f"{name}: rows {rows_} are the same string (string id {int(sorted_ids[dup[0]])}); "
                    "give one row per architecture (average seeds into the columns of one row)"
                )
            valid, cost = valid[order], cost[order]
            columns = {k: v[order] for k, v in columns.items()}
            test = None if test is None else np.asarray(test, np.float32)[order]
            row_ids = sorted_ids
        if dense and num_rows > space.size:
            raise ValueError(f"{name}: dense table has {num_rows} rows but {space.name} has {space.size} strings")
        check_protocol(protocol)
        if report_kind not in REPORTS:
            raise ValueError(f"report_kind must be one of {list(REPORTS)}, got {report_kind!r}")
        if valid.ndim == 1:
            valid = valid[:, None]
        present = ~np.isnan(valid)
        test, test_runs = split_test(name, test, present)
        n_seeds = present.sum(1).astype(np.int32)
        if np.any(n_seeds == 0):
            raise ValueError(f"{name}: {int(np.sum(n_seeds == 0))} rows have no validation value")
        if not np.all(present[np.arange(valid.shape[1])[None, :] < n_seeds[:, None]]):
            raise ValueError(f"{name}: missing seeds must be the last columns of a row")
        # fill absent seeds with the row mean so "random" never reads NaN
        row_mean = np.nanmean(valid, axis=1)
        valid = np.where(present, valid, row_mean[:, None])
        has_test = test is not None
        check_runs_for(name, protocol, has_test, test_runs)
        test = row_mean if test is None else np.asarray(test, np.float32)
        if np.any(~np.isfinite(test)):
            r = int(np.argmax(~np.isfinite(test)))
            raise ValueError(f"{name}: test[{r}] = {float(test[r])} is not a finite score")
        if row_ids is None:
            row_ids = np.zeros((0,), np.int32)
        else:
            row_ids = np.asarray(row_ids)
            if np.any(np.diff(row_ids.astype(np.int64)) <= 0):
                raise ValueError(f"{name}: row_ids must be strictly increasing")
            row_ids = row_ids.astype(np.int32)
        return cls(
            valid=jnp.asarray(valid),
            n_seeds=jnp.asarray(n_seeds),
            test=jnp.asarray(test, jnp.float32),
            test_runs=jnp.asarray(test_runs),
            cost=jnp.asarray(cost),
            row_ids=jnp.asarray(row_ids),
            space=space,
            name=name,
            protocol=protocol,
            has_test=has_test,
            report_kind=report_kind,
            columns={k: jnp.asarray(v) for k, v in columns.items()},
            metric_info=metric_info,
            cost_unit=cost_unit,
        )

    @classmethod
    def from_dict(
        cls,
        *,
        name: str,
        space: Space,
        table: dict,
        protocol: str = "mean",
        report_kind: str = "identity",
        fidelities=None,
        fidelity_unit: str = "",
        metrics=(),
    ) -> TabularBenchmark:
        """A table from ``{tokens: score}`` (bring your own benchmark).

        Keys are token strings (tuples of ints; ``space.from_spec`` turns a
        readable spec into one). A value is the
        validation score (higher is better; one float or a list of per-seed
        floats) or a dict ``{"valid": ..., "test": ..., "cost": float}`` (``test``: one float, or one per
        run of ``valid``, the same run in the same place: the ``random_run`` protocol reads them).
        Rows may come in any order; they are matched to strings by ``string_id``.

        ``metrics`` declares further columns (``Metric("latency", "ms")`` or ``("latency", "ms")``,
        ``direction`` "minimize" by default): every dict entry then holds a value for each
        (``{"valid": ..., "latency": 3.1, "params": 1.2e6}``), and ``query`` returns them.

        With ``fidelities`` (e.g. ``(12, 200)``, ``fidelity_unit="epochs"``) each of ``valid``, ``test``
        and ``cost`` holds one value per fidelity: a dict keyed by the budget (``{12: 71.2, 200: 91.0}``)
        or a list in the order of ``fidelities``; ``valid``'s values may be lists of per-seed scores.
        The result is a ``MultiFidelityTable``.
        """
        if not isinstance(table, dict):
            raise ValueError(f"{name}: the table is a dict {{tokens: score or dict}}, got a {type(table).__name__}")
        if not table:
            raise ValueError(f"{name}: the table is empty")
        if fidelities is not None:
            budgets = check_fidelities(name, fidelities, fidelity_unit)
            levels = [
                {tokens: _at_fidelity(name, tokens, entry, i, budgets) for tokens, entry in table.items()}
                for i in range(len(budgets))
            ]
            tables = [
                cls.from_dict(
                    name=name, space=space, table=lvl, protocol=protocol, report_kind=report_kind, metrics=metrics
                )
                for lvl in levels
            ]
            return MultiFidelityTable.stack(name, tables, budgets, fidelity_unit)
        metric_info = metric_infos(metrics)
        named = [m.name for m in metric_info]
        strings, valid, test, cost, columns = [], [], [], [], {n: [] for n in named}
        for tokens, entry in table.items():
            strings.append(np.asarray(tokens, np.int64).reshape(-1))
            entry = entry if isinstance(entry, dict) else {"valid": entry}
            unknown = set(entry) - {"valid", "test", "cost", *named}
            if unknown or "valid" not in entry or any(n not in entry for n in named):
                raise ValueError(
                    f"{name}: entry for {tuple(tokens)} needs 'valid'{''.join(f', {n!r}' for n in named)} and may "
                    f"have 'test', 'cost'; got {sorted(entry)}"
                    + (" (declare further columns with metrics=)" if unknown else "")
                )
            try:
                valid.append(np.atleast_1d(np.asarray(entry["valid"], np.float32)))
                t = entry.get("test")  # one score, or one per run of 'valid' (random_run)
                test.append(None if t is None else (float(t) if np.ndim(t) == 0 else np.asarray(t, np.float32)))
                cost.append(float(entry.get("cost", 0.0)))
                for n in named:
                    columns[n].append(float(entry[n]))
            except (TypeError, ValueError) as e:
                where = f"{name}: entry for {tuple(tokens)}"
                raise ValueError(f"{where}: values must be numbers ({e}); got {entry!r:.80}") from None
        if len({s.shape for s in strings}) != 1:
            raise ValueError(f"{name}: every key must be a token string of length {space.num_tokens}")
        seeds = padded_runs(valid)
        has_test = [t is not None for t in test]
        if any(has_test) and not all(has_test):
            raise ValueError(f"{name}: give 'test' for every entry or for none")
        if all(has_test) and any(np.ndim(t) for t in test):  # per-run test scores
            if any(np.shape(np.atleast_1d(t)) != v.shape for t, v in zip(test, valid)):
                raise ValueError(f"{name}: per-run 'test' needs one score per run of 'valid' in every entry")
            test = padded_runs([np.atleast_1d(np.asarray(t, np.float32)) for t in test])
        return cls.build(
            name=name,
            space=space,
            valid=seeds,
            cost=np.asarray(cost, np.float32),
            test=np.asarray(test, np.float32) if all(has_test) else None,
            strings=np.stack(strings),
            protocol=protocol,
            report_kind=report_kind,
            metrics={n: np.asarray(v, np.float32) for n, v in columns.items()},
            metric_info=metric_info,
        )

    # -- static facts ----------------------------------------------------------
    @property
    def size(self) -> int:
        return int(self.valid.shape[0])

    @property
    def num_seeds(self) -> int:
        return int(self.valid.shape[1])

    def with_protocol(self, protocol: str) -> TabularBenchmark:
        check_runs_for(self.name, check_protocol(protocol), self.has_test, self.test_runs)
        return self.replace(protocol=protocol)

    # -- the objective ----------------------------------------------------------
    def rows(self, tokens: jax.Array) -> jax.Array:
        """int32[B] table row of each string, -1 when invalid or absent."""
        ids = jax.vmap(self.space.string_id)(tokens)
        if self.row_ids.shape[0] == 0:
            ok = (ids >= 0) & (ids < self.size)
            return jnp.where(ok, ids, -1)
        pos = jnp.clip(jnp.searchsorted(self.row_ids, ids), 0, self.size - 1)
        ok = (ids >= 0) & (self.row_ids[pos] == ids)
        return jnp.where(ok, pos, -1)

    def mean_valid(self) -> jax.Array:
        cols = jnp.arange(self.num_seeds)[None, :] < self.n_seeds[:, None]
        return jnp.sum(jnp.where(cols, self.valid, 0.0), 1) / self.n_seeds

    def query(self, key: jax.Array, tokens: jax.Array) -> dict[str, jax.Array]:
        """``tokens[B, N] -> {"valid", "test", "cost"}``, each f32[B]."""
        if tokens.ndim != 2 or tokens.shape[1] != self.space.num_tokens:
            raise ValueError(f"{self.name}.query expects tokens[B, {self.space.num_tokens}], got {tokens.shape}")
        row = self.rows(tokens)
        ok = row >= 0
        r = jnp.maximum(row, 0)
        test = self.test[r]
        if self.protocol in ("random", "random_run"):
            seed = jax.random.randint(key, row.shape, 0, jnp.iinfo(jnp.int32).max) % self.n_seeds[r]
            valid = self.valid[r, seed]
            if self.protocol == "random_run":  # the drawn run's test score (its validation where there is no test)
                test = self.test_runs[r, seed] if self.test_runs.shape[1] else valid
        else:
            cols = jnp.arange(self.num_seeds)[None, :] < self.n_seeds[r][:, None]
            valid = jnp.sum(jnp.where(cols, self.valid[r], 0.0), 1) / self.n_seeds[r]
        neg_inf = jnp.float32(-jnp.inf)
        return {
            "valid": jnp.where(ok, valid, neg_inf),
            "test": jnp.where(ok, test, neg_inf),
            "cost": jnp.where(ok, self.cost[r], 0.0),
            **{k: jnp.where(ok, col[r], jnp.nan) for k, col in self.columns.items()},
        }

    # -- host summaries -----------------------------------------------------------
    def best_valid(self) -> dict[str, float | None]:
        """Best seed-mean validation entry and its test score (reported units)."""
        mv = np.asarray(jax.jit(type(self).mean_valid)(self))  # one program, not one per operation
        i = int(np.argmax(mv))
        return {
            "best_valid": float(mv[i]),
            "test_of_best_valid": float(np.asarray(self.test)[i]) if self.has_test else None,
            "best_valid_report": float(self.report(mv[i])),
        }


def _build_levels(
    cls, *, name, space, valid, cost, test, fidelities, fidelity_unit, rows, protocol, report_kind, cost_unit, metrics,
    metric_info,
):
    """``TabularBenchmark.build`` once per fidelity (arrays with a leading fidelity axis)."""
    budgets = check_fidelities(name, fidelities, fidelity_unit)
    f = len(budgets)
    valid = np.asarray(valid, np.float32)
    for arr, what in ((valid, "valid"), (cost, "cost"), (test, "test")):
        if arr is not None and (np.ndim(arr) < 2 or np.shape(arr)[0] != f):
            raise ValueError(
                f"{name}: with {f} fidelities {what} needs a leading fidelity axis of {f}, got shape {np.shape(arr)}"
            )
    tables = [
        cls.build(
            name=name,
            space=space,
            valid=valid[i],
            cost=None if cost is None else np.asarray(cost)[i],
            test=None if test is None else np.asarray(test)[i],
            protocol=protocol,
            report_kind=report_kind,
            metrics={k: np.asarray(v)[i] if np.ndim(v) == 2 else v for k, v in (metrics or {}).items()},
            metric_info=metric_info,
            cost_unit=cost_unit,
            **rows,
        )  # fmt: skip
        for i in range(f)
    ]
    return MultiFidelityTable.stack(name, tables, budgets, fidelity_unit)


def _at_fidelity(name, tokens, entry, i, budgets):
    """A ``from_dict`` entry's values at fidelity ``i`` (values keyed by budget or listed per fidelity)."""
    entry = entry if isinstance(entry, dict) else {"valid": entry}

    def pick(field, value):
        if field not in ("valid", "test", "cost") and np.ndim(value) == 0 and not isinstance(value, dict):
            return value  # a metric of the configuration (its latency, its size): one value at every fidelity
        if isinstance(value, dict):
            by_budget = {float(k): v for k, v in value.items()}
            if sorted(by_budget) != sorted(budgets):
                raise ValueError(
                    f"{name}: entry for {tuple(tokens)}: {field} needs one value per fidelity {budgets}, "
                    f"got budgets {sorted(by_budget)}"
                )
            return by_budget[budgets[i]]
        if isinstance(value, (list, tuple)) and len(value) == len(budgets):
            return value[i]
        raise ValueError(
            f"{name}: entry for {tuple(tokens)}: {field} needs one value per fidelity {budgets} "
            f"(a dict keyed by budget or a list of {len(budgets)}), got {value!r}"
        )

    return {k: pick(k, v) for k, v in entry.items()}
