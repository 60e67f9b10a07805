"""Reports of a many-seed comparison: summary JSON, CSV table, PNG plot.

The protocol: after each query the incumbent is the string with
the best validation score so far (ties keep the earlier query); the reported
figure is the incumbent's test score converted by ``benchmark.report`` (error
in % for accuracy tables, MSE for HPOLib), or its seed-mean validation score
where the table has no test split, and the summary says which. Statistics
over trials: mean, std (population std, ``ddof=0``), median and quartiles at
fixed query counts.

Everything is written atomically (``spaces.files``).
"""

from __future__ import annotations

import csv
import io
import json
import math

import numpy as np

from nas.engine.incumbent import incumbent_scores
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
    """Statistics over trials of a [T, Q] reported curve at the query counts ``points``."""
    cols = reported[:, np.asarray(points) - 1]
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
    """``summary.json`` content and the per-query reported curves ([T, Q] per label)."""
    points = query_points(max_queries, every)
    curves, per = {}, {}
    for label, h in histories.items():
        curves[label] = benchmark.report(incumbent_scores(h["score"], h["report_score"]))
        per[label] = {"options": options.get(label, {}), **searcher_summary(curves[label], points)}
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
        "searchers": per,
    }
    return summary, curves


def write_csv(path: str, summary: dict) -> None:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["searcher", "queries", "mean", "std", "median", "q25", "q75", "num_trials", "metric", "protocol"])
    for label, s in summary["searchers"].items():
        for i, q in enumerate(s["queries"]):
            row = [float(s[k][i]) for k in ("mean", "std", "median", "q25", "q75")]
            w.writerow([label, q, *(f"{v:.6g}" for v in row), s["num_trials"], summary["metric"], summary["protocol"]])
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


def plot_curves(path: str, curves: dict[str, np.ndarray], summary: dict, band=(0.25, 0.75)) -> None:
    """``curves_figure`` as a PNG at ``path`` (atomically)."""
    fig = curves_figure(curves, summary, band)
    save_figure(fig, path, dpi=fig.dpi)


def curves_figure(curves: dict[str, np.ndarray], summary: dict, band=(0.25, 0.75)):
    """The incumbent's reported metric vs queries: median line and a quantile band per searcher, the table's
    best-validation configuration as a dashed line where known (a ``matplotlib.figure.Figure``: no pyplot
    state, and pyplot's import is not paid)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.4), dpi=120)
    ax = fig.subplots()
    positive = True
    lows, highs = [], []
    for label, c in curves.items():
        c = np.where(np.isfinite(c), c, np.nan)
        x = np.arange(1, c.shape[1] + 1)
        med = np.nanmedian(c, 0)
        lo, hi = np.nanquantile(c, band[0], 0), np.nanquantile(c, band[1], 0)
        positive &= bool(np.nanmin(lo) > 0)
        (line,) = ax.plot(x, med, label=f"{label} (n={c.shape[0]})")
        ax.fill_between(x, lo, hi, color=line.get_color(), alpha=0.2, linewidth=0)
        lows.append(lo)
        highs.append(hi)
    log = positive and "MSE" in summary["metric"]  # HPOLib MSE spans decades
    if log:
        ax.set_yscale("log")
    ref = summary.get("table_best_valid_reported")
    if ref is not None and np.isfinite(ref) and (ref > 0 or not log):
        ax.axhline(ref, color="0.3", linestyle="--", linewidth=0.9, label=reference_label(ref))
    else:
        ref = None
    limits = y_range(lows, highs, ref, log)
    if limits is not None:
        ax.set_ylim(*limits)
    ax.set_xlabel("queries")
    ax.set_ylabel(y_label(summary), fontsize=9)
    ax.set_title(plot_title(summary, band), fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return fig


def format_table(summary: dict, at=None) -> str:
    """Markdown table: mean +- std of the reported metric at the given query counts.

    Default columns: a third, two thirds and all of the budget (50/100/150 for 150 queries),
    snapped to the reported query points; 4 significant digits (MSEs near 1e-5 stay readable).
    """
    points = summary["searchers"][next(iter(summary["searchers"]))]["queries"] if summary["searchers"] else []
    if at is None:
        m = summary["max_queries"]
        at = sorted({min(points, key=lambda p, q=q: abs(p - q)) for q in (m / 3, 2 * m / 3, m)}) if points else [m]
    at = [q for q in at if q <= summary["max_queries"]] or [summary["max_queries"]]
    head = f"| searcher | {' | '.join(f'{q} queries' for q in at)} | trials | protocol |"
    lines = [head, "|" + "---|" * (len(at) + 3)]
    for label, s in summary["searchers"].items():
        cells = []
        for q in at:
            if q in s["queries"]:
                i = s["queries"].index(q)
                cells.append(f"{s['mean'][i]:.4g} +- {s['std'][i]:.2g}")
            else:
                cells.append("-")
        lines.append(f"| {label} | {' | '.join(cells)} | {s['num_trials']} | {summary['protocol']} |")
    return f"{summary['metric']} of the incumbent ({summary['benchmark']})\n" + "\n".join(lines)
