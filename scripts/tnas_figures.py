"""Leave-one-task-out figures for TNAS: anytime curves per target and the mean rank across targets.

    python -m scripts.tnas_figures --runs=cifar10:/tmp/tnas_exp/cifar10,cifar100:/tmp/tnas_exp/cifar100,\
imagenet16:/tmp/tnas_exp/imagenet16 --out=docs/figures/tnas_nb201.png

Each run folder is a ``scripts.train`` workdir of ``configs/<suite>_tnas.py:<target>``. After ``t``
queries the incumbent is the best by validation so far and the figure is its reported error (test error
where the run was given test data). Ranks (1 = best) compare the methods' seed-mean errors on one target
at one budget; the mean rank averages them over targets (the paper's presentation). Prints a markdown
table of seed-mean error (+- standard error) at the ``--at`` budgets and of the mean ranks.
"""

from __future__ import annotations

import os

import numpy as np
from absl import app, flags

_RUNS = flags.DEFINE_string("runs", None, "Comma-separated target:workdir[+workdir...] pairs.")
_OUT = flags.DEFINE_string("out", "tnas.png", "Output PNG.")
_AT = flags.DEFINE_string("at", "5,10,20,30,50,100", "Budgets of the printed tables.")
flags.mark_flag_as_required("runs")


def incumbent_error(score: np.ndarray, report: np.ndarray) -> np.ndarray:
    """Reported error (100 - accuracy) of the best-by-validation query so far, f32[trials, T]."""
    from nas.runner import incumbent_curve

    _, rep = incumbent_curve(score, report)
    return 100.0 - np.asarray(rep)


def load_runs(spec: str) -> dict[str, dict[str, np.ndarray]]:
    runs = {}
    for item in spec.split(","):
        target, folders = item.split(":", 1)
        runs[target] = {}
        for folder in folders.split("+"):  # several workdirs of one target: their searchers together
            hist = os.path.join(folder, "history")
            for f in sorted(os.listdir(hist)):
                with np.load(os.path.join(hist, f)) as d:
                    runs[target][f[:-4]] = incumbent_error(d["score"], d["report_score"])
    return runs


def mean_ranks(runs) -> tuple[list[str], np.ndarray]:
    """Methods present on every target and their mean rank f32[methods, T]."""
    methods = sorted(set.intersection(*[set(r) for r in runs.values()]))
    ranks = []
    for r in runs.values():
        means = np.stack([r[m].mean(0) for m in methods])  # [methods, T]
        ranks.append(np.argsort(np.argsort(means, axis=0, kind="stable"), axis=0) + 1.0)
    return methods, np.mean(ranks, axis=0)


def main(argv):
    del argv
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = load_runs(_RUNS.value)
    at = [int(a) for a in _AT.value.split(",")]
    methods, ranks = mean_ranks(runs)
    fig, axes = plt.subplots(1, len(runs) + 1, figsize=(4.5 * (len(runs) + 1), 3.6))
    for ax, (target, r) in zip(axes, runs.items()):
        for m in methods:
            mean = r[m].mean(0)
            se = r[m].std(0) / np.sqrt(r[m].shape[0])
            q = np.arange(1, mean.shape[0] + 1)
            ax.plot(q, mean, label=m)
            ax.fill_between(q, mean - se, mean + se, alpha=0.2)
        ax.set(title=f"nb201/{target}", xlabel="queries", ylabel="test error of incumbent (%)", xscale="log")
    for i, m in enumerate(methods):
        axes[-1].plot(np.arange(1, ranks.shape[1] + 1), ranks[i], label=m)
    axes[-1].set(title="mean rank over targets", xlabel="queries", ylabel="rank (1 = best)", xscale="log")
    axes[-1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(_OUT.value, dpi=110)
    print(f"wrote {_OUT.value}\n")
    for target, r in runs.items():
        print(f"nb201/{target}: test error (%) of the incumbent, mean +- s.e. over {r[methods[0]].shape[0]} seeds\n")
        print("| method | " + " | ".join(f"{a} q" for a in at) + " |\n|---|" + "---|" * len(at))
        for m in methods:
            e = r[m]
            cells = [f"{e[:, a - 1].mean():.2f} +- {e[:, a - 1].std() / np.sqrt(e.shape[0]):.2f}" for a in at]
            print(f"| {m} | " + " | ".join(cells) + " |")
        print()
    print("mean rank over targets\n\n| method | " + " | ".join(f"{a} q" for a in at) + " |\n|---|" + "---|" * len(at))
    for i, m in enumerate(methods):
        print(f"| {m} | " + " | ".join(f"{ranks[i, a - 1]:.2f}" for a in at) + " |")


if __name__ == "__main__":
    app.run(main)
