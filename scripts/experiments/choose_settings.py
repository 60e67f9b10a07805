"""Chooses a searcher setting from runs on choice benchmarks (``configs/setting_choice.py``,
``configs/remaade_long.py``): the best mean rank of the searched score.

    python -m scripts.experiments.choose_settings --workdirs=/tmp/choice_alphax_analog,/tmp/choice_alphax_protein
    python -m scripts.experiments.choose_settings --workdirs=/tmp/choice_remaade_protein --at=500,1000,3200 \
        --only=remaade_

Each workdir holds candidate settings as its searchers on one benchmark (workdirs on the same benchmark
are merged: e.g. one meta-trained TNAS variant per workdir); every benchmark needs the same candidates,
run on the same trial keys. For each benchmark and query count of ``--at`` the candidates
are ranked by the mean over trials of the best validation score found so far (what a searcher sees; no
test score is read), ties sharing the average rank; the choice is the candidate with the best mean rank
over all (benchmark, query count) pairs, ties broken by the larger mean standardized score. Prints a
markdown table: each candidate's best validation (reported units, mean +- s.e.) per benchmark and query
count, its mean rank, and the choice.
"""

from __future__ import annotations

import numpy as np
from absl import flags

from nas.experiment import cli
from scripts.experiments.paired_effects import mean_se, reported_curves

_WORKDIRS = flags.DEFINE_list("workdirs", None, "scripts.train workdirs, one per choice benchmark")
_AT = flags.DEFINE_list("at", [], "query counts to rank at (default: the run's budget)")
_ONLY = flags.DEFINE_string("only", "", "only labels starting with this prefix (e.g. 'remaade_': no baselines)")


def best_so_far(scores: np.ndarray) -> np.ndarray:
    """f64[T, Q]: the best searched score among the first q queries (failed queries are -inf)."""
    return np.maximum.accumulate(np.where(np.isnan(scores), -np.inf, scores).astype(np.float64), axis=1)


def average_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks (1 = best = largest value), ties sharing their average rank."""
    order = np.argsort(-values, kind="stable")
    ranks = np.empty(len(values))
    ranks[order] = np.arange(1, len(values) + 1)
    for v in np.unique(values):
        tie = values == v
        ranks[tie] = ranks[tie].mean()
    return ranks


def choose(runs: dict[str, dict[str, np.ndarray]], at: list[int]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """``runs``: benchmark -> {label: best-so-far f64[T, Q]}. Returns (labels, mean rank, mean z-score)."""
    labels = list(next(iter(runs.values())))
    ranks, zs = [], []
    for best in runs.values():
        if list(best) != labels:
            raise SystemExit(f"every workdir needs the same searcher labels: {list(best)} vs {labels}")
        for q in at:
            means = np.asarray([best[label][:, q - 1].mean() for label in labels])
            ranks.append(average_ranks(means))
            spread = means.std()
            zs.append((means - means.mean()) / spread if spread > 0 else np.zeros_like(means))
    return labels, np.mean(ranks, axis=0), np.mean(zs, axis=0)


def main(argv):
    del argv
    runs, benches = {}, {}
    for wd in _WORKDIRS.value:
        config, bench, _, scores = reported_curves(wd)
        name = config["benchmark"]
        mine = {k: best_so_far(v) for k, v in scores.items() if k.startswith(_ONLY.value)}
        if set(mine) & set(runs.get(name, {})):
            raise SystemExit(f"{wd}: labels {sorted(set(mine) & set(runs[name]))} already came from another workdir")
        runs.setdefault(name, {}).update(mine)  # workdirs on one benchmark: their candidates side by side
        benches[name] = bench
    at = [int(q) for q in _AT.value] or [int(config["max_queries"])]
    labels, rank, z = choose(runs, at)
    head = [f"{b} at {q}" for b in runs for q in at]
    print("| setting | " + " | ".join(head) + " | mean rank |")
    print("|---" * (len(head) + 2) + "|")
    for i, label in enumerate(labels):
        cells = []
        for b, best in runs.items():
            for q in at:
                m, se = mean_se(np.asarray(benches[b].report(best[label][:, q - 1]), np.float64))
                cells.append(f"{m:.4g} +- {se:.2g}")
        print(f"| {label} | " + " | ".join(cells) + f" | {rank[i]:.2f} |")
    pick = min(range(len(labels)), key=lambda i: (rank[i], -z[i]))
    trials = {b: len(next(iter(best.values()))) for b, best in runs.items()}
    print(f"\nchoice: {labels[pick]} (mean rank {rank[pick]:.2f}; trials per benchmark {trials}; ranked at {at})")


if __name__ == "__main__":
    flags.mark_flag_as_required("workdirs")
    cli.run(main)
