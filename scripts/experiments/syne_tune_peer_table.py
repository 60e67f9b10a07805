"""The Syne Tune peer on NAS-Bench-201 at 12 and 200 epochs: the incumbent's test error at 10/25/50/100 % of a
compute budget in full (200-epoch) trainings, S seeds (the keys of a config with ``seed`` 0 and ``num_trials``
S, so the rows sit beside ``scripts.train`` runs of single-fidelity searchers with the same seeds).

    python -m scripts.experiments.syne_tune_peer_table                                   # 3 datasets, 100 seeds
    python -m scripts.experiments.syne_tune_peer_table --datasets=cifar10 --num_trials=20

The compute axis: the resource of the results in so far, in the order they arrived, over the top budget; the
incumbent at ``x`` full trainings is the best configuration evaluated at 200 epochs among the results whose
resource fits in ``x`` (``nas.engine.incumbent.top_fidelity_score``, the rule of every searcher).
"""

from __future__ import annotations

import time

import jax
import numpy as np
from absl import flags

from nas.experiment import cli

_DATASETS = flags.DEFINE_list("datasets", ["cifar10", "cifar100", "imagenet16"], "NAS-Bench-201 datasets.")
_TEST = flags.DEFINE_string("test_data", "../shared/data/nb201/nats_bench_test_acc.csv", "NB201 test accuracies.")
_FIDELITY = flags.DEFINE_string("fidelity_data", "../shared/data/nb201/mini_nb201_12epoch.pd", "12-epoch table.")
_TRIALS = flags.DEFINE_integer("num_trials", 100, "Seeds.")
_QUERIES = flags.DEFINE_integer("max_queries", 100, "Budget in full (200-epoch) trainings.")
SCHEDULERS = (("asha", 4), ("hyperband", 1), ("hyperband", 4))  # (scheduler, workers)
FRACTIONS = (0.1, 0.25, 0.5, 1.0)


def incumbent_at_compute(h, budgets, points) -> np.ndarray:
    """f64[S, P]: the incumbent's report score after ``points`` full trainings of compute (-inf: none yet)."""
    from nas.engine.incumbent import incumbent_scores, top_fidelity_score

    score = top_fidelity_score(np.asarray(h.score), np.asarray(h.fidelity), len(budgets))
    inc = incumbent_scores(score, np.asarray(h.report_score))
    full = np.cumsum(np.asarray(h.resource, np.float64), -1) / budgets[-1]
    rows = np.stack([np.sum(full <= x * (1 + 1e-6) + 1e-6, -1) - 1 for x in points], -1)
    return np.where(rows >= 0, np.take_along_axis(inc, np.maximum(rows, 0), -1), -np.inf)


def main(argv):
    del argv
    from nas.experiment import peers
    from spaces.benchmarks.registry import make_benchmark

    keys = jax.random.split(jax.random.PRNGKey(0), _TRIALS.value)
    points = [f * _QUERIES.value for f in FRACTIONS]
    print(f"test error (%) of the incumbent at {', '.join(f'{f:.0%}' for f in FRACTIONS)} of {_QUERIES.value} full "
          f"trainings, mean +- std over {_TRIALS.value} trials; wall time of the run in seconds")
    print(f"| dataset | Syne Tune scheduler | W | {' | '.join(f'{f:.0%}' for f in FRACTIONS)} | seconds |")
    print("|---|---|---|" + "---|" * len(FRACTIONS) + "---|")
    for ds in _DATASETS.value:
        bench = make_benchmark(f"nb201/{ds}", test_csv=_TEST.value, fidelity_data=_FIDELITY.value)
        for scheduler, w in SCHEDULERS:
            peer = peers.make_peer("syne_tune", bench.space, fidelities=bench.fidelities, max_queries=_QUERIES.value,
                                   workers=w, scheduler=scheduler, seeds_per_group=0)  # fmt: skip
            t0 = time.perf_counter()
            h = peers.run_peer(peer, bench, keys, progress=False)
            err = bench.report(incumbent_at_compute(h, bench.fidelities, points))
            cells = []
            for p in range(len(points)):
                ok = np.isfinite(err[:, p])  # trials with an incumbent at that point
                note = "" if ok.all() else f" ({ok.sum()} trials)"
                cells.append(f"{np.mean(err[ok, p]):.2f} +- {np.std(err[ok, p]):.2f}{note}")
            print(f"| {ds} | {scheduler} | {w} | {' | '.join(cells)} | {time.perf_counter() - t0:.0f} |", flush=True)


if __name__ == "__main__":
    cli.run(main)
