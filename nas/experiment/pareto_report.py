"""Reports of multi-objective runs: fronts, hypervolume and its gap to the true front.

The protocol extends the single-objective one (``nas.experiment.report``) to several objectives: the
**front found** after ``q`` queries is the set of queried configurations that no other of the first
``q`` dominates in what the searcher sees (validation score and metrics), and its figures are those
configurations' **reported** values (test error where the table has a test split, else seed-mean
validation error; metrics in their units). A multi-fidelity run's front is chosen among its
evaluations at the top fidelity, on the compute axis (full evaluations), as its incumbent is.

Hypervolume (``nas.core.hypervolume``) is computed per objective on the loss scale the searcher
optimizes (``-score``: error for accuracy tables, ``log`` MSE for HPOLib; a metric as is, negated if
higher is better), normalized by the problem's ``ideal`` (0) and ``reference`` (1):

- a table (every configuration known): ideal = the table's best reported value of each objective;
  reference = the table's **median** reported error, and for each metric the largest value on the true
  front among its networks more accurate than that median, plus 10 % of its range (the usual "nadir plus
  a margin", so the front's most accurate network counts). The **true front**
  is the table's front chosen by the same rule (non-dominated on validation, reported on test): the
  front a run that queried every configuration would report, so the **hypervolume gap**
  ``100 * (1 - HV(found) / HV(true))`` (%) is 0 exactly for such a run;
- an objective that trains (no table): the same statistics over every configuration that any searcher
  of the experiment evaluated, and the gap to their pooled front (a lower bound of the true gap).
"""

from __future__ import annotations

import dataclasses
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from nas.core.hypervolume import hypervolume, normalize
from nas.core.pareto import dominates, nondominated_mask
from nas.experiment import cost_axis
from spaces.benchmarks.metrics import metric

FRACTIONS = (0.25, 0.5, 1.0)  # of the budget: the hypervolume gaps every table shows
MARGIN = 0.1  # the reference point's metrics lie this share of the front's range beyond its costliest network


@dataclasses.dataclass(frozen=True)
class Problem:
    """The objectives of a report and their normalization (module docstring)."""

    names: tuple[str, ...]  # the metrics after the score
    signs: tuple[float, ...]  # per objective: loss = sign * value (score: -1; a metric to minimize: +1)
    ideal: np.ndarray  # f64[M]
    reference: np.ndarray  # f64[M]
    front: np.ndarray  # f64[F, M]: the true (or pooled) front's reported losses
    hv_true: float
    source: str  # "table" or "pooled"


def signs_of(objective, names: tuple[str, ...]) -> tuple[float, ...]:
    return (-1.0,) + tuple(1.0 if metric(objective, n).direction == "minimize" else -1.0 for n in names)


def losses_of(score, metrics: dict, names, signs) -> np.ndarray:
    """f64[..., M]: ``[sign * score, sign * metric, ...]`` (NaN / -inf score: +inf everywhere, a failed row)."""
    cols = [np.asarray(score, np.float64)] + [np.asarray(metrics[n], np.float64) for n in names]
    out = np.stack([s * c for s, c in zip(signs, cols)], axis=-1)
    bad = ~np.all(np.isfinite(out), axis=-1)
    return np.where(bad[..., None], np.inf, out)


def _problem(names, signs, search, report, source) -> Problem:
    ok = np.all(np.isfinite(search), -1) & np.all(np.isfinite(report), -1)
    search, report = search[ok], report[ok]
    front = report[nondominated_mask(search)]
    ideal = report.min(0)
    median_error = np.median(report[:, 0])
    accurate = front[front[:, 0] < median_error]
    nadir = (accurate if len(accurate) else front)[:, 1:].max(0)  # the front's costliest network that counts
    reference = np.concatenate([[median_error], nadir + MARGIN * (nadir - ideal[1:])])
    reference = np.where(reference > ideal, reference, ideal + 1.0)  # a constant objective: a unit box
    hv = float(hypervolume(jnp.asarray(normalize(front, ideal, reference)), jnp.ones(len(names) + 1)))
    return Problem(tuple(names), tuple(signs), ideal, reference, front, hv, source)


def table_problem(bench, names: tuple[str, ...]) -> Problem | None:
    """The problem of a table (every configuration's scores and metrics known), or None for other objectives."""
    base = getattr(bench, "base", bench)  # a constrained objective: the front of the whole table
    if not hasattr(base, "columns") or not hasattr(base, "mean_valid"):
        return None
    signs = signs_of(base, names)
    cols = {n: np.asarray(base.columns[n]) for n in names}
    search = losses_of(np.asarray(jax.jit(type(base).mean_valid)(base)), cols, names, signs)
    report = losses_of(np.asarray(base.test), cols, names, signs)
    return _problem(names, signs, search, report, "table")


def pooled_problem(objective, histories: dict[str, dict], names: tuple[str, ...]) -> Problem:
    """The problem from every evaluation of every history (objectives without a table)."""
    signs = signs_of(objective, names)
    search, report = [], []
    for h in histories.values():
        s, r = history_losses(h, names, signs)
        search.append(s.reshape(-1, s.shape[-1]))
        report.append(r.reshape(-1, r.shape[-1]))
    return _problem(names, signs, np.concatenate(search), np.concatenate(report), "pooled")


def history_losses(h: dict, names, signs, num_fidelities: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """(search, report) losses f64[T, E, M] of a history; rows below the top fidelity are failed (+inf)."""
    search = losses_of(h["score"], h["metrics"], names, signs)
    report = losses_of(h["report_score"], h["metrics"], names, signs)
    if "fidelity" in h:
        low = np.asarray(h["fidelity"]) != num_fidelities - 1
        search = np.where(low[..., None], np.inf, search)
        report = np.where(low[..., None], np.inf, report)
    return search, report


@jax.jit
def _hv_at_rows(search, report, rows, ideal, reference):
    """f32[K]: the hypervolume of the front found among rows ``0..rows[k]`` of one trial (-1: none)."""
    e = search.shape[0]
    ok = jnp.all(jnp.isfinite(search), -1)
    dom = dominates(search[:, None, :], search[None, :, :]) & ok[:, None] & ok[None, :]
    # row j is on the front of the first q rows iff j < q and no row before q dominates it
    first_dominator = jnp.min(jnp.where(dom, jnp.arange(e)[:, None], e), axis=0)
    points = normalize(report, ideal, reference)
    ones = jnp.ones((search.shape[1],), jnp.float32)

    def at(last):
        q = last + 1
        front = ok & (jnp.arange(e) < q) & (first_dominator >= q)
        return hypervolume(points, ones, front)

    return jax.vmap(at)(rows)


def hypervolume_at(h: dict, problem: Problem, rows: np.ndarray, num_fidelities: int = 1) -> np.ndarray:
    """f64[T, K]: per trial, the hypervolume of the front found by row ``rows[t, k]`` (inclusive; -1: 0)."""
    search, report = history_losses(h, problem.names, problem.signs, num_fidelities)
    fn = jax.vmap(_hv_at_rows, in_axes=(0, 0, 0, None, None))
    args = (jnp.asarray(search, jnp.float32), jnp.asarray(report, jnp.float32), jnp.asarray(rows, jnp.int32))
    hv = np.asarray(fn(*args, jnp.asarray(problem.ideal, jnp.float32), jnp.asarray(problem.reference, jnp.float32)))
    return np.where(np.asarray(rows) >= 0, hv, 0.0).astype(np.float64)


def gap(hv: np.ndarray, problem: Problem) -> np.ndarray:
    """The hypervolume gap in % (module docstring)."""
    return 100.0 * (1.0 - np.asarray(hv) / problem.hv_true)


def stats(values: np.ndarray) -> dict:
    """mean, std, s.e., median, quartiles over trials (axis 0)."""
    v = np.asarray(values, np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return {
            "mean": v.mean(0), "std": v.std(0), "se": v.std(0) / np.sqrt(max(v.shape[0], 1)),
            "median": np.median(v, 0), "q25": np.quantile(v, 0.25, 0), "q75": np.quantile(v, 0.75, 0),
        }  # fmt: skip


def searcher_pareto(
    h: dict, problem: Problem, budgets: tuple[float, ...], max_queries: int, cost_grid=None
) -> dict:
    """Hypervolume and its gap at ``FRACTIONS`` of the budget, along the query axis (every full evaluation)
    and along the summed cost (``cost_grid``, the objective's cost units, e.g. training seconds)."""
    axes = cost_axis.running_axes(h, budgets[-1], len(budgets))
    grid = np.arange(1, max_queries + 1, dtype=np.float64)
    cost_grid = np.zeros((0,)) if cost_grid is None else np.asarray(cost_grid, np.float64)
    points = np.concatenate([np.asarray(FRACTIONS) * max_queries, grid])
    rows = [cost_axis.row_at(axes["full"], x) for x in points] + [cost_axis.row_at(axes["cost"], x) for x in cost_grid]
    g = gap(hv := hypervolume_at(h, problem, np.stack(rows, axis=1), len(budgets)), problem)
    k, q = len(FRACTIONS), len(points)
    return {
        "fractions": list(FRACTIONS), "hypervolume": stats(hv[:, :k]), "gap": stats(g[:, :k]),
        "curve_x": grid, "curve_gap": g[:, k:q], "cost_x": cost_grid, "cost_gap": g[:, q:],
    }  # fmt: skip


def final_fronts(h: dict, problem: Problem, budgets: tuple[float, ...], max_queries: int) -> list[np.ndarray]:
    """Per trial, the reported losses ``[F, M]`` of the front found with the whole budget."""
    search, report = history_losses(h, problem.names, problem.signs, len(budgets))
    axes = cost_axis.running_axes(h, budgets[-1], len(budgets))
    last = cost_axis.row_at(axes["full"], float(max_queries))
    out = []
    for t in range(search.shape[0]):
        s, r = search[t, : last[t] + 1], report[t, : last[t] + 1]
        ok = np.all(np.isfinite(s), -1)
        out.append(r[ok][nondominated_mask(s[ok])])
    return out


def attainment(fronts: list[np.ndarray], xs: np.ndarray, level: float = 0.5) -> np.ndarray:
    """The ``level`` attainment surface of 2-objective fronts (losses ``[F, 2]``) on ``xs`` (second objective):
    per trial the best first objective reached at second objective ``<= x``, then the ``level`` quantile over
    trials (``inf`` where fewer than that share of trials reach ``x``): the median front over seeds at 0.5."""
    best = np.full((len(fronts), len(xs)), np.inf)
    for t, f in enumerate(fronts):
        for p in f:
            best[t] = np.where(xs >= p[1], np.minimum(best[t], p[0]), best[t])
    return np.quantile(best, level, axis=0, method="higher")
