r"""Table 2 and Figure 9 of Negrinho et al. (2019) from a host-search workdir.

Reads the runs that ``scripts.language_search`` saved (``<workdir>/runs/<label>_<trial>.npz``),
prints a markdown table (per searcher: the best validation accuracy after the budget and the
test accuracy of the validation-chosen incumbent, mean +- standard error over trials, and the
number of distinct architectures trained) and draws Figure 9: the best validation accuracy
against architectures sampled (mean +- s.e.) and the histogram of the validation accuracies of
every architecture each searcher trained.

    python -m scripts.figures.language_table2_figure --workdir=/tmp/lang_table2 \
        --figure=docs/figures/language_figure9.png
"""

from __future__ import annotations

import collections
import glob
import os

import numpy as np
from absl import flags

from nas.experiment import cli
from nas.host.task_search import incumbent_curves
from spaces.files import save_figure

FLAGS = flags.FLAGS
flags.DEFINE_string("workdir", "", "workdir of scripts.language_search")
flags.DEFINE_string("figure", "docs/figures/language_figure9.png", "figure (PNG); empty: none")


def load_runs(workdir: str) -> dict[str, list[dict]]:
    runs: dict[str, list[dict]] = collections.defaultdict(list)
    for path in sorted(glob.glob(os.path.join(workdir, "runs", "*.npz"))):
        label = os.path.basename(path).rsplit("_", 1)[0]
        runs[label].append(dict(np.load(path)))
    if not runs:
        raise SystemExit(f"no runs in {workdir}/runs: run scripts.language_search with this --workdir first")
    return dict(runs)


def se(x) -> float:
    x = np.asarray(x, np.float64)
    return float(np.std(x, ddof=1) / np.sqrt(len(x))) if len(x) > 1 else 0.0


def table(runs: dict[str, list[dict]]) -> str:
    lines = [
        "| searcher | trials | best valid acc | test acc of the incumbent | distinct architectures / run |",
        "|---|---|---|---|---|",
    ]
    for label, rs in runs.items():
        curves = [incumbent_curves(r["valid"], r["test"]) for r in rs]
        v = [c[0][-1] for c in curves]
        t = [c[1][-1] for c in curves]
        distinct = [len({tuple(row) for row in r["tokens"]}) for r in rs]
        lines.append(
            f"| {label} | {len(rs)} | {np.mean(v):.4f} +- {se(v):.4f} | {np.mean(t):.4f} +- {se(t):.4f} | "
            f"{np.mean(distinct):.1f} |"
        )
    return "\n".join(lines)


def plot(runs: dict[str, list[dict]], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    bins = None
    for label, rs in runs.items():
        best = np.stack([incumbent_curves(r["valid"], r["test"])[0] for r in rs])
        x = np.arange(1, best.shape[1] + 1)
        m = best.mean(0)
        s = best.std(0, ddof=1) / np.sqrt(len(rs)) if len(rs) > 1 else np.zeros_like(m)
        axes[0].plot(x, m, label=label)
        axes[0].fill_between(x, m - s, m + s, alpha=0.2)
        vals = np.concatenate([r["valid"][np.isfinite(r["valid"])] for r in rs])
        if bins is None:
            bins = np.linspace(min(0.5, float(vals.min())), 1.0, 26)
        axes[1].hist(vals, bins=bins, histtype="step", label=label)
    axes[0].set(xlabel="architectures sampled", ylabel="best validation accuracy (mean +- s.e.)")
    axes[1].set(xlabel="validation accuracy", ylabel="architectures (all trials)")
    axes[0].legend(fontsize=8)
    fig.suptitle("Searchers on the Genetic space, digits (Negrinho et al. 2019, Figure 9)")
    save_figure(fig, path)


def main(argv):
    del argv
    runs = load_runs(FLAGS.workdir)
    print(table(runs))
    if FLAGS.figure:
        plot(runs, FLAGS.figure)


if __name__ == "__main__":
    cli.run(main)
