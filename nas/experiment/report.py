"""Reports of a many-seed comparison: summary JSON, CSV table, PNG plot.

The protocol: after each query the incumbent is the string with
the best validation score so far (ties keep the earlier query); the reported
figure is the incumbent's test score converted by ``benchmark.report`` (error
in % for accuracy tables, MSE for HPOLib), or its seed-mean validation score
where the table has no test split, and the summary says which. Statistics
over trials: mean, std (population std, ``ddof=0``), median and quartiles at
fixed query counts. The text tables (``nas.experiment.tables``, re-exported
here) print mean +- std or mean +- s.e. and say which; cost and wall-clock are
in the objective's ``cost_unit``.

Everything is written atomically (``spaces.files``).
"""

from __future__ import annotations

import csv
import io
import json
import math
import warnings

import numpy as np

from nas.engine.incumbent import incumbent_scores
from nas.experiment import cost_axis
from nas.experiment.tables import SPREADS, cost_unit, format_budget_table, format_table, spread_cell  # noqa: F401
from spaces.benchmarks.objective import fidelity_budgets
from spaces.files import save_figure, write_text_atomic


def clean(x):
    """JSON-safe: numpy scalars to Python, non-finite floats to None."""
    if isinstance(x, dict):
        return {str(k): clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [clean(v) for v in x]
    if isinstance(x, np.ndarray):
        return clean(x.tolist())
    if isinstance(x, (np.floating, float)):
        return float(x) if math.isfinite(float(x)) else None
    if isinstance(x, np.integer):
        return int(x)
    return x


def write_json(path: str, obj) -> None:
    """``obj`` as indented JSON (numpy values converted, non-finite floats as null), written atomically."""
    write_text_atomic(path, json.dumps(clean(obj), indent=2, sort_keys=False) + "\n")


def query_points(max_queries: int, every: int) -> list[int]:
    """``every, 2*every, ...`` up to ``max_queries`` (always included)."""
    pts = list(range(every, max_queries + 1, every)) if every > 0 else []
    if not pts or pts[-1] != max_queries:
        pts.append(max_queries)
    return pts


def searcher_summary(reported: np.ndarray, points: list[int]) -> dict:
    """Statistics over trials of a [T, Q] reported curve at the query counts ``points`` (where a trial has no
    incumbent yet, a multi-fidelity run before its first top-fidelity result, over the trials that have one)."""
    cols = reported[:, np.asarray(points) - 1]
    if not np.all(np.isfinite(cols)):
        cols = np.where(np.isfinite(cols), cols, np.nan)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a column without any incumbent: nan
            return {
                "num_trials": int(reported.shape[0]), "queries": list(points), "mean": np.nanmean(cols, 0),
                "std": np.nanstd(cols, 0), "median": np.nanmedian(cols, 0), "q25": np.nanquantile(cols, 0.25, 0),
                "q75": np.nanquantile(cols, 0.75, 0), "trials_with_incumbent": np.sum(np.isfinite(cols), 0),
            }  # fmt: skip
    return {
        "num_trials": int(reported.shape[0]),
        "queries": list(points),
        "mean": np.mean(cols, 0),
        "std": np.std(cols, 0),
        "median": np.median(cols, 0),
        "q25": np.quantile(cols, 0.25, 0),
        "q75": np.quantile(cols, 0.75, 0),
    }


def split_name(benchmark) -> str:
    return "test" if benchmark.has_test else "validation"


def build_summary(benchmark, histories: dict[str, dict], options: dict[str, dict], max_queries: int, every: int):
    """``summary.json`` content and the per-query reported curves ([T, Q] per label).

    Every searcher also gets ``budget`` (``nas.experiment.cost_axis``: the reported metric and the cost and
    simulated wall-clock spent at 10/25/50/100 % of the budget) and, per query count, ``cost_mean`` and
    ``wallclock_mean``. A multi-fidelity searcher's "queries" are full evaluations of compute (its
    curve: the incumbent once that much resource is spent)."""
    points = query_points(max_queries, every)
    if getattr(benchmark, "fidelities", ()):  # the budget fractions every report reads, where whole queries
        exact = [int(f * max_queries) for f in cost_axis.FRACTIONS if float(f * max_queries).is_integer()]
        points = sorted(set(points) | set(exact))
    budgets = fidelity_budgets(benchmark)
    curves, per = {}, {}
    for label, h in histories.items():
        axes = cost_axis.running_axes(h, budgets[-1], len(budgets))
        if cost_axis.is_multi_fidelity_history(h):
            curves[label] = benchmark.report(cost_axis.full_evaluation_curve(axes, max_queries))
        else:
            curves[label] = benchmark.report(incumbent_scores(h["score"], h["report_score"]))
        workers = int(options.get(label, {}).get("workers", 1) or 1)
        per[label] = {
            "options": options.get(label, {}), **searcher_summary(curves[label], points),
            **cost_axis.spent_at(axes, points),
            "budget": cost_axis.budget_summary(axes, max_queries, benchmark.report, workers),
            "multi_fidelity": cost_axis.is_multi_fidelity_history(h),
        }  # fmt: skip
    best = benchmark.best_valid()
    split = split_name(benchmark)
    oracle = None
    if best is not None:
        oracle = float(benchmark.report(best["test_of_best_valid"] if benchmark.has_test else best["best_valid"]))
    summary = {
        "benchmark": benchmark.name,
        "protocol": benchmark.protocol,
        "metric": benchmark.report_name,
        "split": split,
        "note": (
            "reported: test score of the incumbent (best validation so far)"
            if benchmark.has_test
            else "no test split: reported figures are the incumbent's seed-mean VALIDATION metric"
        ),
        "max_queries": int(max_queries),
        "table_best_valid_reported": oracle,
        "fidelities": list(getattr(benchmark, "fidelities", ()) or ()),
        "fidelity_unit": getattr(benchmark, "fidelity_unit", ""),
        "cost_unit": getattr(benchmark, "cost_unit", ""),
        "cost_note": (
            "budget: max_queries full evaluations (top-fidelity trainings); the incumbent is the best top-fidelity "
            "result whose compute fits in each fraction of it; cost_mean: the objective's cost spent by then "
            "(e.g. seconds), wallclock_mean: simulated wall-clock with the searcher's workers"
        ),
        "searchers": per,
    }
    return summary, curves


def write_csv(path: str, summary: dict) -> None:
    buf = io.StringIO()
    w = csv.writer(buf)
    head = ["searcher", "queries", "mean", "std", "median", "q25", "q75", "num_trials", "metric", "protocol"]
    w.writerow(head + ["budget_fraction", "cost_mean", "wallclock_mean"])  # compute (nas.experiment.cost_axis)
    for label, s in summary["searchers"].items():
        for i, q in enumerate(s["queries"]):
            row = [float(s[k][i]) for k in ("mean", "std", "median", "q25", "q75")]
            spent = [q / summary["max_queries"], float(s["cost_mean"][i]), float(s["wallclock_mean"][i])]
            w.writerow(
                [label, q, *(f"{v:.6g}" for v in row), s["num_trials"], summary["metric"], summary["protocol"]]
                + [f"{v:.6g}" for v in spent]
            )
    write_text_atomic(path, buf.getvalue())


def y_label(summary: dict) -> str:
    """What the curves show: the reported metric of the incumbent, which the searched validation score
    chooses (so a test curve, or a seed-mean validation curve under the "random" protocol, can rise)."""
    return f"{summary['metric']} of the incumbent\n(the configuration with the best validation score so far)"


def plot_title(summary: dict, band=(0.25, 0.75)) -> str:
    """Benchmark, protocol where the objective has one, and what the line and the band are."""
    protocol = summary.get("protocol")
    where = f"{summary['benchmark']} ({protocol} protocol)" if protocol not in (None, "", "-") else summary["benchmark"]
    return f"{where}: median over trials, {int(band[0] * 100)}-{int(band[1] * 100)}% band"


def reference_label(value: float) -> str:
    """The legend entry of the reference line: the incumbent's metric once it is the table's best entry."""
    return f"best-validation configuration of the table: {value:.4g}"


def y_range(lows: list[np.ndarray], highs: list[np.ndarray], ref: float | None, log: bool) -> tuple | None:
    """Y limits that show the bands after their first tenth of queries (the first few random queries would
    stretch the axis and squash the interesting range) and the reference line, with 5 % margins; None
    when nothing is finite."""
    start = max(1, lows[0].shape[0] // 10) if lows else 0
    values = np.concatenate([v[start:] for v in lows + highs] + [np.asarray([] if ref is None else [ref])])
    values = values[np.isfinite(values) & (values > 0 if log else True)]
    if values.size == 0:
        return None
    lo, hi = float(values.min()), float(values.max())
    if log:
        pad = (np.log10(hi) - np.log10(lo)) * 0.05 or 0.05
        return float(10 ** (np.log10(lo) - pad)), float(10 ** (np.log10(hi) + pad))
    pad = (hi - lo) * 0.05 or abs(hi) * 0.05 or 1.0
    return lo - pad, hi + pad


def plot_curves(
    path: str, curves: dict[str, np.ndarray], summary: dict, band=(0.25, 0.75), compute: dict | None = None
) -> None:
    """``curves_figure`` as a PNG at ``path`` (atomically)."""
    fig = curves_figure(curves, summary, band, compute)
    save_figure(fig, path, dpi=fig.dpi)


def curves_figure(curves: dict[str, np.ndarray], summary: dict, band=(0.25, 0.75), compute: dict | None = None):
    """The incumbent's reported metric vs queries: median line and a quantile band per searcher, the table's
    best-validation configuration as a dotted line where known (a ``matplotlib.figure.Figure``: no pyplot
    state, and pyplot's import is not paid).

    ``compute`` (``compute_curves``; configs with fidelities or parallel workers) adds a panel per compute
    axis: the same metric against the objective's summed cost and against simulated wall-clock (in its cost
    unit), and the first panel's x axis counts full evaluations (of the top budget). Where multi-fidelity
    and single-fidelity searchers share a plot, the multi-fidelity ones come first with solid lines, the
    others dashed, each group under its own legend heading."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    panels = [("queries", None, curves)] + [(name, grid, c) for name, (grid, c) in (compute or {}).items()]
    fig = Figure(figsize=(6.4 * len(panels), 4.4), dpi=120)
    ref = summary.get("table_best_valid_reported")
    groups = searcher_groups(summary, list(curves))
    for ax, (xlabel, grid, panel) in zip(fig.subplots(1, len(panels), squeeze=False)[0], panels):
        positive = True
        lows, highs, handles = [], [], []
        for heading, labels, style in groups:
            if heading:
                handles.append(Line2D([], [], linestyle="none", label=heading))
            for label in labels:
                c = np.where(np.isfinite(panel[label]), panel[label], np.nan)
                x = np.arange(1, c.shape[1] + 1) if grid is None else grid
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)  # points before any incumbent: nan
                    med = np.nanmedian(c, 0)
                    lo, hi = np.nanquantile(c, band[0], 0), np.nanquantile(c, band[1], 0)
                    positive &= bool(np.nanmin(lo) > 0)
                (line,) = ax.plot(x, med, linestyle=style, label=f"{label} (n={c.shape[0]})")
                ax.fill_between(x, lo, hi, color=line.get_color(), alpha=0.2, linewidth=0)
                lows.append(lo)
                highs.append(hi)
                handles.append(line)
        log = positive and "MSE" in summary["metric"]  # HPOLib MSE spans decades
        if log:
            ax.set_yscale("log")
        line_at = ref if ref is not None and np.isfinite(ref) and (ref > 0 or not log) else None
        if line_at is not None:
            handles.append(
                ax.axhline(line_at, color="0.3", linestyle=":", linewidth=0.9, label=reference_label(line_at))
            )
        limits = y_range(lows, highs, line_at, log)
        if limits is not None:
            ax.set_ylim(*limits)
        ax.set_xlabel(xlabel if compute is None or grid is not None else full_evaluations_label(summary))
        ax.set_ylabel(y_label(summary), fontsize=9)
        ax.set_title(plot_title(summary, band), fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(handles=handles, fontsize=7)
    return fig


def searcher_groups(summary: dict, labels: list[str]) -> list[tuple[str, list[str], str]]:
    """``[(legend heading, labels, line style)]``: multi-fidelity searchers (solid) apart from single-fidelity
    ones (dashed) where a plot has both; otherwise one group without a heading, solid."""
    mf = [lb for lb in labels if summary["searchers"].get(lb, {}).get("multi_fidelity", False)]
    sf = [lb for lb in labels if lb not in mf]
    if not mf or not sf:
        return [("", labels, "-")]
    return [("multi-fidelity searchers", mf, "-"), ("single-fidelity searchers", sf, "--")]


def full_evaluations_label(summary: dict) -> str:
    """The compute panel's x axis: full evaluations, of the top budget where the objective has fidelities."""
    fids, unit = summary.get("fidelities") or (), summary.get("fidelity_unit", "")
    return f"compute (full evaluations of {fids[-1]:g} {unit})" if fids else "compute (full evaluations)"


def compute_curves(benchmark, histories: dict[str, dict], summary: dict, num: int = 120) -> dict | None:
    """``{axis name: (grid, {label: reported f64[T, num]})}`` against the summed cost and, where a searcher
    has W > 1 workers, simulated wall-clock; None for single-fidelity configs of sequential searchers
    (their plot stays one panel). The grid ends where the median trial spends the budget."""
    workers = [s["budget"]["workers"] for s in summary["searchers"].values()]
    if not summary.get("fidelities") and max(workers, default=1) == 1:
        return None
    budgets = fidelity_budgets(benchmark)
    axes = {label: cost_axis.running_axes(h, budgets[-1], len(budgets)) for label, h in histories.items()}
    out = {}
    unit = cost_unit(summary)
    for axis, name in (("cost", f"cost (summed, {unit})"), ("clock", f"simulated wall-clock ({unit})")):
        if axis == "clock" and max(workers) == 1:
            continue  # sequential: the wall-clock is the summed cost
        end = max(
            float(np.median(cost_axis.take_rows(a[axis], cost_axis.row_at(a["full"], summary["max_queries"]), 0.0)))
            for a in axes.values()
        )
        grid = np.linspace(0.0, end, num + 1)[1:]
        out[name] = (grid, {lb: benchmark.report(cost_axis.incumbent_at(a, axis, grid)) for lb, a in axes.items()})
    return out


def missing_test_data_hint(benchmark: str) -> str:
    """Where the benchmark's test scores would come from: its public file in the data directory, if it has one."""
    from spaces.benchmarks.data_files import default_path
    from spaces.benchmarks.registry import data_file_key

    key = data_file_key(benchmark, "test_csv")
    if key is None:
        return "this benchmark has no test split"
    return (f"for test figures put the test file at {default_path(key)} or set --config.test_data; "
            "docs/reference/benchmarks.md, Optional data files")
