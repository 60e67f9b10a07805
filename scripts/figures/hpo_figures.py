"""Tables and anytime curves of the Section VIII experiment (``configs/hpo_mlp.py``) from its workdirs.

    python -m scripts.figures.hpo_figures --workdirs=/tmp/hpo_boston,/tmp/hpo_naval --out=docs/figures/hpo_mlp.png

For each workdir (one data set) and searcher (``history/<label>.npz``): validation and test RMSE of the
incumbent (the best validation RMSE so far, ``nas.engine.incumbent.incumbent_curve``) after 30 / 70 / 100
evaluations, mean +- standard error over trials; the failed-evaluation rate (scores of ``-inf``: diverged
training); wall minutes (``elapsed_s`` of the searcher's last chunk in ``metrics.jsonl``, compiles
included). Prints one markdown table per data set and draws the mean validation- and test-RMSE curves
(+- s.e. bands) from 10 evaluations on.
"""

from __future__ import annotations

import json
import os

import numpy as np
from absl import flags

from nas.experiment import cli
from spaces.files import save_figure

_WORKDIRS = flags.DEFINE_list("workdirs", [], "Workdirs of configs/hpo_mlp.py runs, one per data set.")
_OUT = flags.DEFINE_string("out", "", "PNG of the anytime curves (empty: no figure).")
_AT = flags.DEFINE_list("at", ["30", "70", "100"], "Evaluation counts of the table columns.")
NAMES = {
    "remaade": "ReMAADE",
    "random_search": "random search",
    "tpe": "TPE (Optuna)",
    "regularized_evolution": "regularized evolution",
    "bananas": "BANANAS",
}


def incumbent(score: np.ndarray, report: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[T, Q] validation RMSE and test RMSE of the incumbent after each evaluation (inf before any success)."""
    from nas.engine.incumbent import incumbent_curve

    best, rep = incumbent_curve(np.asarray(score), np.asarray(report))
    return -np.asarray(best, np.float64), -np.asarray(rep, np.float64)


def wall_minutes(workdir: str) -> dict[str, float]:
    out = {}
    path = os.path.join(workdir, "metrics.jsonl")
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                m = json.loads(line)
                out[m["searcher"]] = max(out.get(m["searcher"], 0.0), m.get("elapsed_s", 0.0) / 60)
    return out


def mean_se(x: np.ndarray) -> str:
    return f"{np.mean(x):.4g} +- {np.std(x, ddof=1) / np.sqrt(len(x)):.2g}" if len(x) > 1 else f"{x[0]:.4g}"


def load(workdir: str) -> tuple[str, dict]:
    config = json.load(open(os.path.join(workdir, "config.json")))
    runs = {}
    for label in NAMES:
        path = os.path.join(workdir, "history", f"{label}.npz")
        if os.path.exists(path):
            d = np.load(path)
            runs[label] = (d["score"], d["report_score"])
    return config["benchmark"], runs


def main(argv):
    del argv
    at = [int(a) for a in _AT.value]
    panels = []
    for wd in _WORKDIRS.value:
        bench, runs = load(wd)
        minutes = wall_minutes(wd)
        cols = " | ".join(f"test RMSE at {a}" for a in at)
        print(f"\n{bench} ({wd})\n")
        print(f"| searcher | trials | validation RMSE at {at[-1]} (searched) | {cols} | failed | minutes |")
        print("|---|---|---|" + "---|" * len(at) + "---|---|")
        curves = {}
        for label, (score, report) in runs.items():
            val, test = incumbent(score, report)
            failed = 100 * np.mean(~np.isfinite(score))
            row = " | ".join(mean_se(test[:, a - 1]) for a in at)
            print(
                f"| {NAMES[label]} | {len(score)} | {mean_se(val[:, at[-1] - 1])} | {row} | {failed:.1f}% "
                f"| {minutes.get(label, float('nan')):.1f} |"
            )
            curves[label] = (val, test)
        panels.append((bench, curves))
    if _OUT.value and panels:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(2, len(panels), figsize=(6 * len(panels), 8), squeeze=False)
        for col, (bench, curves) in enumerate(panels):
            for row, split in enumerate(("validation", "test")):
                ax, lows, highs = axes[row][col], [], []
                for label, pair in curves.items():
                    x = np.where(np.isfinite(pair[row]), pair[row], np.nan)
                    q = np.arange(1, x.shape[1] + 1)
                    m = np.nanmean(x, 0)
                    se = np.nanstd(x, 0, ddof=1) / np.sqrt(np.sum(np.isfinite(x), 0))
                    ax.plot(q, m, label=f"{NAMES[label]} ({len(x)} trials)")
                    ax.fill_between(q, m - se, m + se, alpha=0.2)
                    lows.append(np.nanmin((m - se)[9:]))
                    highs.append(np.nanmax((m + se)[9:]))
                ax.set_xlim(10, None)
                ax.set_ylim(min(lows) * 0.97, max(highs) * 1.03)
                ax.set_xlabel("evaluations")
                ax.set_ylabel(f"{split} RMSE of the incumbent")
                ax.set_title(f"{bench}: {split} RMSE (mean +- s.e.)")
                ax.legend(fontsize=8)
        save_figure(fig, _OUT.value, dpi=120)
        print(f"\nwrote {_OUT.value}")


if __name__ == "__main__":
    cli.run(main)
