"""Leave-one-task-out figures for TNAS: anytime curves per target and the mean rank across targets.

    python -m scripts.figures.tnas_figures --runs=cifar10:/tmp/tnas_exp/cifar10,cifar100:/tmp/tnas_exp/cifar100,\
imagenet16:/tmp/tnas_exp/imagenet16 --out=docs/figures/tnas_nb201.png

Each run folder is a ``scripts.train`` workdir of ``configs/<suite>_tnas.py:<target>``. After ``t``
queries the incumbent is the best by validation so far and the figure is its reported error (test error
where the run was given test data). Ranks (1 = best) compare the methods' seed-mean errors on one target
at one budget; the mean rank averages them over targets (the paper's presentation). Prints markdown
tables: per target, seed-mean error (+- standard error) at the ``--at`` budgets; per ``--summary_at``
budget, methods x targets; the mean ranks at the ``--at`` budgets.
"""

from __future__ import annotations

import os

import numpy as np
from absl import flags

from nas.experiment import cli
from spaces.files import save_figure

_RUNS = flags.DEFINE_string("runs", None, "Comma-separated target:workdir[+workdir...] pairs.")
_OUT = flags.DEFINE_string("out", "tnas.png", "Output PNG.")
_AT = flags.DEFINE_string("at", "5,10,20,30,50,100", "Budgets of the printed tables.")
_SUITE = flags.DEFINE_string("suite", "nb201", "Benchmark prefix of the targets (figure titles).")
_REPORT = flags.DEFINE_enum(
    "report",
    "error",
    ["error", "error_frac", "log_mse", "rmse", "valid_rmse"],
    "error: 100 - accuracy (%); error_frac: 100 (1 - accuracy fraction); log_mse: log10 MSE (score = -log MSE); "
    "rmse: RMSE (score = -RMSE, the real-training MLP tasks); valid_rmse: the incumbent's validation RMSE "
    "(what the search minimizes) instead of its reported test RMSE.",
)
_RANK_OUT = flags.DEFINE_string("rank_out", "", "Optional PNG of the mean-rank curves alone.")
_ONLY = flags.DEFINE_list("only", [], "Methods to show (default: every method present on every target).")
_REACH = flags.DEFINE_string("reach", "gp_bo:50", "method:budget: print how soon each method reaches its error.")
_SUMMARY_AT = flags.DEFINE_list("summary_at", ["20", "100"], "Budgets of the method x target summary tables.")
flags.mark_flag_as_required("runs")


ERROR = "error of incumbent (%)"
LABELS = {
    "error": ERROR,
    "error_frac": ERROR,
    "log_mse": "log10 MSE of incumbent",
    "rmse": "test RMSE of incumbent",
    "valid_rmse": "validation RMSE of incumbent",
}


def incumbent_error(score: np.ndarray, report: np.ndarray, kind: str = "error") -> np.ndarray:
    """The reported error of the best-by-validation query so far, f32[trials, T] (lower is better):
    ``100 - accuracy`` (%), ``100 (1 - accuracy)`` for fractions, ``log10 MSE`` for scores ``-log MSE`` or
    ``RMSE`` for scores ``-RMSE`` (``valid_rmse``: the validation score itself, not the report)."""
    from nas.engine.incumbent import incumbent_curve

    if kind == "valid_rmse":
        report, kind = score, "rmse"
    _, rep = incumbent_curve(score, report)
    rep = np.asarray(rep, np.float64)
    if kind == "log_mse":
        return -rep / np.log(10.0)
    if kind == "rmse":
        return -rep
    return 100.0 * (1.0 - rep) if kind == "error_frac" else 100.0 - rep


def load_runs(spec: str, kind: str = "error") -> dict[str, dict[str, np.ndarray]]:
    runs = {}
    for item in spec.split(","):
        target, folders = item.split(":", 1)
        runs[target] = {}
        for folder in folders.split("+"):  # several workdirs of one target: their searchers together
            hist = os.path.join(folder, "history")
            for f in sorted(os.listdir(hist)):
                with np.load(os.path.join(hist, f)) as d:
                    runs[target][f[:-4]] = incumbent_error(d["score"], d["report_score"], kind)
    return runs


def mean_ranks(runs, only=()) -> tuple[list[str], np.ndarray]:
    """Methods present on every target (those of ``only`` if given) and their mean rank f32[methods, T]:
    per target and budget, the methods ranked by seed-mean error (1 = best, ties broken by name), averaged
    over targets."""
    methods = sorted(set.intersection(*[set(r) for r in runs.values()]))
    if only:
        missing = sorted(set(only) - set(methods))
        if missing:
            raise ValueError(f"methods {missing} are not on every target; have {methods}")
        methods = [m for m in methods if m in only]
    ranks = []
    for r in runs.values():
        means = np.stack([r[m].mean(0) for m in methods])  # [methods, T]
        ranks.append(np.argsort(np.argsort(means, axis=0, kind="stable"), axis=0) + 1.0)
    return methods, np.mean(ranks, axis=0)


def queries_to_reach(r: dict[str, np.ndarray], ref: str, budget: int) -> dict[str, str]:
    """Per method, the first query count at which its seed-mean error is at or below ``ref``'s after ``budget``
    queries (``"> T"`` if never): "reaches a given quality in fewer queries"."""
    goal = r[ref].mean(0)[budget - 1]
    out = {}
    for m, e in r.items():
        hit = np.flatnonzero(e.mean(0) <= goal + 1e-9)
        out[m] = str(hit[0] + 1) if hit.size else f"> {e.shape[1]}"
    return out


def mean_se(e: np.ndarray, queries: int) -> str:
    """``mean +- s.e.`` over seeds of the error after ``queries`` queries (``e``: f32[seeds, T])."""
    col = e[:, queries - 1]
    mean, se = col.mean(), col.std() / np.sqrt(e.shape[0])
    if abs(mean) < 1.0:  # small errors (Naval's RMSE ~ 0.002): significant digits instead of two decimals
        return f"{mean:.3g} +- {se:.2g}"
    return f"{mean:.2f} +- {se:.2f}"


def print_table(title: str, columns, rows: dict[str, list[str]]) -> None:
    """A markdown table: ``title``, then one row per method with a cell per column."""
    print(f"{title}\n\n| method | " + " | ".join(columns) + " |\n|---|" + "---|" * len(columns))
    for m, cells in rows.items():
        print(f"| {m} | " + " | ".join(cells) + " |")
    print()


def main(argv):
    del argv
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = load_runs(_RUNS.value, _REPORT.value)
    at = [int(a) for a in _AT.value.split(",")]
    methods, ranks = mean_ranks(runs, _ONLY.value)
    ylabel = LABELS[_REPORT.value]
    panels = len(runs) + 1  # a target per panel, then the mean rank; at most 3 panels per row
    cols = min(panels, 3)
    rows = -(-panels // cols)
    fig, grid = plt.subplots(rows, cols, figsize=(4.5 * cols, 3.6 * rows), squeeze=False)
    axes = grid.ravel()[:panels]
    for ax in grid.ravel()[panels:]:
        ax.axis("off")
    for ax, (target, r) in zip(axes, runs.items()):
        for m in methods:
            mean = r[m].mean(0)
            se = r[m].std(0) / np.sqrt(r[m].shape[0])
            q = np.arange(1, mean.shape[0] + 1)
            ax.plot(q, mean, label=m)
            ax.fill_between(q, mean - se, mean + se, alpha=0.2)
        ax.set(title=f"{_SUITE.value}/{target}", xlabel="queries", ylabel=ylabel, xscale="log")
    axes[0].legend(fontsize=7)
    for i, m in enumerate(methods):
        axes[-1].plot(np.arange(1, ranks.shape[1] + 1), ranks[i], label=m)
    axes[-1].set(title="mean rank over targets", xlabel="queries", ylabel="rank (1 = best)", xscale="log")
    axes[-1].legend(fontsize=7)
    save_figure(fig, _OUT.value)
    print(f"wrote {_OUT.value}\n")
    if _RANK_OUT.value:
        fig, ax = plt.subplots(figsize=(5.5, 3.8))
        for i, m in enumerate(methods):
            ax.plot(np.arange(1, ranks.shape[1] + 1), ranks[i], label=m)
        ax.set(title=f"{_SUITE.value}: mean rank over {len(runs)} targets", xlabel="queries",
               ylabel="mean rank (1 = best)", xscale="log")  # fmt: skip
        ax.legend(fontsize=7, ncol=2)
        save_figure(fig, _RANK_OUT.value)
        print(f"wrote {_RANK_OUT.value}\n")
    budgets = [f"{a} q" for a in at]
    for target, r in runs.items():
        short = [m for m in methods if r[m].shape[1] < max(at)]
        if short:
            raise ValueError(f"{target}/{short[0]} has {r[short[0]].shape[1]} queries, fewer than --at={max(at)}")
        seeds = ", ".join(sorted({str(r[m].shape[0]) for m in methods}))
        title = f"{_SUITE.value}/{target}: {ylabel}, mean +- s.e. over seeds ({seeds})"
        print_table(title, budgets, {m: [mean_se(r[m], a) for a in at] for m in methods})
    for a in (int(x) for x in _SUMMARY_AT.value):
        title = f"{ylabel} after {a} queries, mean +- s.e. over seeds"
        print_table(title, list(runs), {m: [mean_se(r[m], a) for r in runs.values()] for m in methods})
    if _REACH.value:
        ref, budget = _REACH.value.split(":")
        reach = {t: queries_to_reach(r, ref, int(budget)) for t, r in runs.items()}
        title = f"queries to reach the seed-mean error {ref} has after {budget} queries"
        print_table(title, list(runs), {m: [reach[t][m] for t in runs] for m in methods})
    mean_rank_cells = {m: [f"{ranks[i, a - 1]:.2f}" for a in at] for i, m in enumerate(methods)}
    print_table("mean rank over targets", budgets, mean_rank_cells)


if __name__ == "__main__":
    cli.run(main)
