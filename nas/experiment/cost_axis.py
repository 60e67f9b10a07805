"""The incumbent against compute: every searcher, single- or multi-fidelity, on one cost axis.

A history (``nas.experiment.workdir``: ``[T, E]`` arrays per trial) gives three running axes, one value
per row (rows in the order results arrived):

- ``full``: the resource spent on the results in so far, in full evaluations (resource / top budget).
  A single-fidelity query is one full evaluation, so there it is the query count.
- ``cost``: the objective's cost of those results summed (e.g. training seconds; a continued
  training counts its continued part).
- ``clock``: the simulated wall-clock when the result arrived (``finish``, W workers in parallel);
  a sequential searcher's clock is its summed cost.

The incumbent after a row is the best top-fidelity result so far (``nas.engine.incumbent``: the same
rule for every searcher); its value at an axis value ``x`` is the incumbent after the last row with
axis value ``<= x``: a result counts once the compute it took fits in ``x``, so an evaluation
dispatched just before the budget ran out and finishing beyond it does not count at 100 %.
Before the first top-fidelity result there is no incumbent (``-inf`` scores; reported figures
leave such trials out and say how many had one).
"""

from __future__ import annotations

import numpy as np

from nas.engine.incumbent import incumbent_scores, top_fidelity_score

FRACTIONS = (0.1, 0.25, 0.5, 1.0)  # of the budget: the points every report reads
_TOL = 1e-6  # relative slack on the axis (sums of float32 charges)


def is_multi_fidelity_history(h: dict) -> bool:
    return "fidelity" in h


def running_axes(h: dict, top_budget: float, num_fidelities: int) -> dict[str, np.ndarray]:
    """``{"incumbent", "full", "cost", "clock"}``, f64[T, E] each: the incumbent's report score after each row
    and the three axes (module docstring)."""
    cost = np.cumsum(np.asarray(h["cost"], np.float64), -1)
    if is_multi_fidelity_history(h):
        score = top_fidelity_score(np.asarray(h["score"]), np.asarray(h["fidelity"]), num_fidelities)
        full = np.cumsum(np.asarray(h["resource"], np.float64), -1) / top_budget
        clock = np.maximum.accumulate(np.asarray(h["finish"], np.float64), -1)  # idle rows keep the last time
    else:
        score = np.asarray(h["score"])
        full = np.broadcast_to(np.arange(1, score.shape[-1] + 1, dtype=np.float64), score.shape)
        clock = cost
    return {"incumbent": incumbent_scores(score, np.asarray(h["report_score"])), "full": full, "cost": cost,
            "clock": clock}  # fmt: skip


def row_at(axis: np.ndarray, x: float) -> np.ndarray:
    """int[T]: per trial, the last row whose axis value is ``<= x`` (-1 when none)."""
    limit = x * (1.0 + _TOL) + _TOL
    return np.sum(axis <= limit, axis=-1) - 1


def take_rows(values: np.ndarray, rows: np.ndarray, before=-np.inf) -> np.ndarray:
    """``values[t, rows[t]]`` per trial, ``before`` where ``rows[t]`` is -1."""
    got = np.take_along_axis(values, np.maximum(rows, 0)[:, None], axis=-1)[:, 0]
    return np.where(rows >= 0, got, before)


def incumbent_at(axes: dict, axis: str, points) -> np.ndarray:
    """f64[T, P]: the incumbent's report score at each axis value of ``points`` (``-inf``: none yet)."""
    return np.stack([take_rows(axes["incumbent"], row_at(axes[axis], x)) for x in points], axis=-1)


def spent_at(axes: dict, points) -> dict[str, list[float]]:
    """``cost_mean`` and ``wallclock_mean``: the cost and the simulated clock of the results counted at each
    point of compute (full evaluations), mean over trials."""
    rows = [row_at(axes["full"], x) for x in points]
    return {
        "cost_mean": [float(np.mean(take_rows(axes["cost"], r, 0.0))) for r in rows],
        "wallclock_mean": [float(np.mean(take_rows(axes["clock"], r, 0.0))) for r in rows],
    }


def budget_summary(axes: dict, max_queries: int, report, workers: int) -> dict:
    """The incumbent's reported metric and the compute spent at ``FRACTIONS`` of the budget (in full evaluations)."""
    points = [f * max_queries for f in FRACTIONS]
    stats = {k: [] for k in ("mean", "std", "median", "q25", "q75", "trials_with_incumbent")}
    for x in points:
        rows = row_at(axes["full"], x)
        rep = np.asarray(report(take_rows(axes["incumbent"], rows)), np.float64)
        ok = np.isfinite(rep)
        vals = rep[ok] if ok.any() else np.full(1, np.nan)
        stats["mean"].append(np.mean(vals))
        stats["std"].append(np.std(vals))
        stats["median"].append(np.median(vals))
        stats["q25"].append(np.quantile(vals, 0.25))
        stats["q75"].append(np.quantile(vals, 0.75))
        stats["trials_with_incumbent"].append(int(ok.sum()))
    return {"fractions": list(FRACTIONS), "full_evaluations": points, **stats, **spent_at(axes, points),
            "workers": int(workers)}  # fmt: skip


def full_evaluation_curve(axes: dict, max_queries: int) -> np.ndarray:
    """f64[T, Q]: the incumbent's report score after 1..``max_queries`` full evaluations of compute
    (for a single-fidelity searcher: after each query)."""
    return incumbent_at(axes, "full", range(1, max_queries + 1))
