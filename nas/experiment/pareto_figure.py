"""``pareto.png``: the fronts found against the true front, and the hypervolume gap against queries and compute.

Left (two objectives): every searcher's **median attainment surface** over trials (the error reached at
each metric value by at least half of the trials, ``nas.experiment.pareto_report.attainment``) as a
step line, and the true (or pooled) front as black points, in reported units (error %, MSE, ...
against the metric's unit). Then the hypervolume gap (%) against queries (full evaluations) and against
compute (the objective's summed cost, e.g. training seconds), median over trials with the 25-75 % band.
Drawn with ``matplotlib.figure.Figure`` (no pyplot state).
"""

from __future__ import annotations

import warnings

import numpy as np

from nas.experiment import pareto_report as pr
from spaces.files import save_figure

PANELS = (  # (x, y, x label) of the gap panels
    ("curve_x", "curve_gap", "queries (full evaluations)"),
    ("cost_x", "cost_gap", "compute (summed cost, objective's units)"),
)


def to_reported(losses: np.ndarray, problem: pr.Problem, report) -> tuple[np.ndarray, np.ndarray]:
    """(reported error, metric value) of 2-objective losses ``[F, 2]`` (loss = sign * value, sign = +-1)."""
    err = report(np.asarray(losses[:, 0]) * problem.signs[0])
    return np.asarray(err, np.float64), np.asarray(losses[:, 1]) * problem.signs[1]


def plot_pareto(path: str, summary: dict, drawn: dict, report) -> None:
    """Writes ``pareto.png`` (module docstring) atomically."""
    from matplotlib.figure import Figure

    problem: pr.Problem = drawn["problem"]
    two = len(problem.names) == 1
    fig = Figure(figsize=(6.4 * (len(PANELS) + two), 4.6), dpi=120)
    axes = fig.subplots(1, len(PANELS) + two, squeeze=False)[0]
    metric_label = summary["pareto"]["objectives"][1] if two else ""
    if two:
        ax = axes[0]
        true = problem.front[np.argsort(problem.front[:, 1])]
        err, met = to_reported(true, problem, report)
        ax.plot(met, err, "k.", markersize=5, label=f"true front ({problem.source}, {len(true)} points)", zorder=5)
        xs = np.linspace(float(np.min(problem.front[:, 1])), float(problem.reference[1]), 400)  # loss scale
        for label, d in drawn["searchers"].items():
            surface = pr.attainment(d["fronts"], xs)
            ok = np.isfinite(surface)
            if ok.any():
                e, m = to_reported(np.stack([surface[ok], xs[ok]], 1), problem, report)
                ax.step(m, e, where="post", label=f"{label} (median of {len(d['fronts'])})", linewidth=1.2)
        ax.set_xlabel(metric_label)
        ax.set_ylabel(summary["metric"])
        ref_err = float(report(np.asarray(problem.reference[0] * problem.signs[0])))
        ax.set_ylim(float(np.min(err)) - 0.05 * abs(ref_err - float(np.min(err))), ref_err)
        if "MSE" in summary["metric"]:
            ax.set_yscale("log")
        ax.set_title(f"{summary['benchmark']}: median attainment surface over trials", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    for ax, (xkey, ykey, xlabel) in zip(axes[1 if two else 0 :], PANELS):
        for label, d in drawn["searchers"].items():
            c = d[ykey]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                med, lo, hi = np.median(c, 0), np.quantile(c, 0.25, 0), np.quantile(c, 0.75, 0)
            (line,) = ax.plot(d[xkey], med, label=label)
            ax.fill_between(d[xkey], lo, hi, color=line.get_color(), alpha=0.2, linewidth=0)
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("hypervolume gap to the true front (%)")
        ax.set_title(f"{summary['benchmark']}: {' vs '.join(summary['pareto']['objectives'])}, median, 25-75 %",
                     fontsize=9)  # fmt: skip
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
    save_figure(fig, path, dpi=fig.dpi)
