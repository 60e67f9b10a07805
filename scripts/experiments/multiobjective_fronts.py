"""The exact true front of each table: error against a metric over every configuration.

    python -m scripts.experiments.multiobjective_fronts
    python -m scripts.experiments.multiobjective_fronts --pairs=nb201/cifar10:latency --show_front

For each (table, metric) prints the table's size, the true front (the configurations no other dominates in
seed-mean validation score and metric, reported on the test split where the table has one: the front a run
that queried every configuration reports, ``nas.experiment.pareto_report``), the normalization of the
hypervolume (ideal, and the reference point: the median error and the front's costliest network below it
plus a margin), the true front's hypervolume, and for comparison the size of the front chosen on the test split itself.
"""

from __future__ import annotations

import numpy as np
from absl import flags

from nas.experiment import cli

PAIRS = (
    "nb201/cifar10:latency", "nb201/cifar10:model_size", "nb201/cifar100:latency", "nb201/cifar100:model_size",
    "nb201/imagenet16:latency", "nb201/imagenet16:model_size", "hpolib/naval_propulsion:train_time",
)  # fmt: skip
_PAIRS = flags.DEFINE_list("pairs", list(PAIRS), "benchmark:metric pairs.")
_TEST = flags.DEFINE_string("test_data", "../shared/data/nb201/nats_bench_test_acc.csv", "NB201 test accuracies.")
_SHOW = flags.DEFINE_bool("show_front", False, "Print every point of the true front.")


def main(argv):
    del argv
    from nas.core.pareto import nondominated_mask
    from nas.experiment import pareto_report as pr
    from spaces.benchmarks.registry import make_benchmark

    print("| table | metric | configurations | true front | ideal (error, metric) | reference (error, metric) "
          "| HV of the true front | front on the test split alone |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for pair in _PAIRS.value:
        name, metric = pair.split(":")
        bench = make_benchmark(name, **({"test_csv": _TEST.value} if name.startswith("nb201/") else {}))
        p = pr.table_problem(bench, (metric,))
        report = pr.losses_of(np.asarray(bench.test), {metric: np.asarray(bench.columns[metric])}, (metric,), p.signs)
        test_front = int(nondominated_mask(report).sum())

        def shown(losses, bench=bench, p=p):
            err = float(bench.report(losses[0] * p.signs[0]))
            return f"({err:.4g}, {losses[1] * p.signs[1]:.4g})"

        print(f"| {name} | {metric} | {bench.size:,} | {len(p.front)} | {shown(p.ideal)} | {shown(p.reference)} | "
              f"{p.hv_true:.4f} | {test_front} |")  # fmt: skip
        if _SHOW.value:
            for row in p.front[np.argsort(p.front[:, 1])]:
                print("   ", shown(row))


if __name__ == "__main__":
    cli.run(main)
