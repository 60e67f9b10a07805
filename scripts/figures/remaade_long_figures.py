"""Tables and figures of the long-budget ReMAADE study (``configs/remaade_long.py``, ``configs/table5.py``).

    python -m scripts.figures.remaade_long_figures --workdirs=/tmp/remaade_long_naval \
        --labels=remaade_ent000_lr1e2,remaade_ent030_lr1e2,regularized_evolution,random_search \
        --out=docs/figures/remaade_long_naval.png

For each workdir prints a markdown table, one row per finished searcher: the reported metric of the
incumbent (``scripts.experiments.paired_effects.reported_curves``) after ``--at`` queries, mean +- s.e. over
trials; the fraction of trials that queried the table's best configuration (by the validation score
the searchers see, "mean" protocol); for the policy searchers the step entropy (mean over seeds,
``metrics.jsonl``, one line per chunk) averaged over its last 10 steps and the fraction of uniform
fallback strings over the whole run and over its second half. Then the paired difference of every
searcher to ``--reference`` at the budget. With ``--out``: one row of three panels per workdir for
the searchers of ``--labels`` (default: all): the step entropy, the fallback fraction, and the
metric of the incumbent over queries (mean over trials; log scales).
"""

from __future__ import annotations

import json
import os

import numpy as np
from absl import flags

from nas.experiment import cli
from scripts.experiments.paired_effects import mean_se, paired_table, reported_curves
from spaces.files import save_figure

_WORKDIRS = flags.DEFINE_list("workdirs", [], "scripts.train workdirs of configs/remaade_long.py or table5.py.")
_LABELS = flags.DEFINE_list("labels", [], "Searchers drawn in the figure (default: all finished ones).")
_AT = flags.DEFINE_list("at", ["500", "1000", "3200"], "Query counts of the table's columns.")
_REFERENCE = flags.DEFINE_string("reference", "regularized_evolution", "The paired comparisons' reference.")
_OUT = flags.DEFINE_string("out", "", "PNG of the figure (empty: tables only).")


def step_metrics(workdir: str) -> dict[str, dict[str, np.ndarray]]:
    """``{label: {"step": f64[K], metric: f64[K], ...}}`` from ``metrics.jsonl``: one entry per recorded
    chunk (its last step's metrics, mean over seeds), in step order."""
    lines: dict[str, dict[int, dict]] = {}
    with open(os.path.join(workdir, "metrics.jsonl"), encoding="utf-8") as f:
        for raw in f:
            line = json.loads(raw)
            lines.setdefault(line["searcher"], {})[int(line["step"])] = line.get("metrics", {})
    out = {}
    for label, by_step in lines.items():
        steps = sorted(by_step)
        keys = sorted({k for m in by_step.values() for k in m})
        out[label] = {k: np.asarray([by_step[s].get(k, np.nan) for s in steps], np.float64) for k in keys}
        out[label]["step"] = np.asarray(steps, np.float64)
    return out


def found_best(scores: np.ndarray, best: float) -> str:
    """The percentage of trials whose queries include the table's best configuration (its score to within
    1e-6 relative: the table's and the query's seed means may differ in the last bit) and the median number
    of queries it took (over all trials; "-" when fewer than half found it)."""
    hit = scores >= best - 1e-6 * abs(best)
    first = np.where(hit.any(axis=1), np.argmax(hit, axis=1) + 1, np.inf)
    median = np.median(first)
    return (
        f"{100 * np.mean(np.isfinite(first)):.0f}% ({median:.0f})"
        if np.isfinite(median)
        else f"{100 * np.mean(np.isfinite(first)):.0f}% (-)"
    )


def study_table(curves: dict, scores: dict, metrics: dict, at: list[int], metric: str, best: float | None) -> str:
    head = " | ".join(f"{metric} at {q}" for q in at)
    rows = [
        f"| searcher | trials | {head} | found best (median q) | entropy, last 10 | fallback | fallback, 2nd half |",
        "|---|---|" + "---|" * len(at) + "---|---|---|---|",
    ]
    for label, c in curves.items():
        cells = " | ".join("{:.4g} +- {:.2g}".format(*mean_se(c[:, q - 1])) for q in at)
        found = "" if best is None else found_best(scores[label], best)
        m = metrics.get(label, {})
        if "entropy" in m:
            fb, late = m["fallback_frac"], m["step"] > m["step"][-1] / 2
            last = m["step"] > m["step"][-1] - 10
            extra = f"{np.nanmean(m['entropy'][last]):.2f} | {np.nanmean(fb):.2f} | {np.nanmean(fb[late]):.2f}"
        else:
            extra = " | | "
        rows.append(f"| {label} | {len(c)} | {cells} | {found} | {extra} |")
    return "\n".join(rows)


def draw(panels: list[tuple[str, dict, dict, float | None]], labels: list[str], out: str, start: int = 100) -> None:
    """Per workdir: step entropy, fallback fraction, and the incumbent's mean metric from ``start`` queries
    on (the table's best configuration dashed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(panels), 3, figsize=(13, 3.4 * len(panels)), squeeze=False)
    for row, (title, curves, metrics, best) in enumerate(panels):
        chosen = [k for k in (labels or list(curves)) if k in curves]
        ax_ent, ax_fb, ax_best = axes[row]
        for label in chosen:
            if "entropy" in metrics.get(label, {}):
                m = metrics[label]
                ax_ent.plot(m["step"], m["entropy"], label=label)
                ax_fb.plot(m["step"], m["fallback_frac"], label=label)
            c = np.where(np.isfinite(curves[label]), curves[label], np.nan)
            q = np.arange(1, c.shape[1] + 1)
            ax_best.plot(q[start - 1 :], np.nanmean(c, 0)[start - 1 :], label=label)
        if best is not None:
            ax_best.axhline(best, color="k", linestyle="--", linewidth=0.8, label="best in the table")
        ax_ent.set(xlabel="step (30 queries)", ylabel="step entropy (nats)", title=f"{title}: policy entropy")
        ax_fb.set(xlabel="step (30 queries)", ylabel="fraction of the batch", title="uniform fallback strings")
        ax_best.set(yscale="log", xlabel="queries", ylabel="metric of the incumbent (mean over trials)")
        ax_best.set_title("best so far")
        for ax in (ax_ent, ax_fb, ax_best):
            ax.legend(fontsize=6)
    save_figure(fig, out, dpi=80)
    print(f"\nwrote {out}")


def main(argv):
    del argv
    at = [int(a) for a in _AT.value]
    panels = []
    for wd in _WORKDIRS.value:
        config, bench, curves, scores = reported_curves(wd)
        metrics = step_metrics(wd)
        best = bench.best_valid() if config.get("protocol") == "mean" else None  # what the searchers see
        print(f"\n{config['benchmark']} ({wd}), {config['num_trials']} trials; best in the table: {best}\n")
        print(study_table(curves, scores, metrics, at, bench.report_name, best and best["best_valid"]))
        if _REFERENCE.value in curves:
            q = int(config["max_queries"])
            print(f"\n{paired_table(curves, _REFERENCE.value, q, bench.report_name)}")
        panels.append((config["benchmark"], curves, metrics, best and best["best_valid_report"]))
    if _OUT.value and panels:
        draw(panels, _LABELS.value, _OUT.value)


if __name__ == "__main__":
    cli.run(main)
