"""Successive halving's promotion order on NAS-Bench-201 at 12 and 200 epochs: the promoted configurations of a
rung dispatched best first (``promotion_order="best_first"``, the default) or in the order they were started
(``"start_order"``), one worker, for brackets that promote 1, 9 and 27 configurations to 200 epochs
(``num_configs`` 0 = 3, 27, 81 at 12 epochs, eta = 3). Prints the incumbent's test error (%) at 10/25/50/100 %
of a budget of 100 full trainings, mean +- s.e. over the trials (the keys of a config with ``seed`` 0):

    python -m scripts.experiments.promotion_order                       # cifar10, 100 trials
    python -m scripts.experiments.promotion_order --dataset=cifar100 --num_trials=20
"""

from __future__ import annotations

import jax
import numpy as np
from absl import flags

from nas.experiment import cli

_DATASET = flags.DEFINE_enum("dataset", "cifar10", ["cifar10", "cifar100", "imagenet16"], "NAS-Bench-201 dataset.")
_TEST = flags.DEFINE_string("test_data", "../shared/data/nb201/nats_bench_test_acc.csv", "NB201 test accuracies.")
_FIDELITY = flags.DEFINE_string("fidelity_data", "../shared/data/nb201/mini_nb201_12epoch.pd", "12-epoch table.")
_TRIALS = flags.DEFINE_integer("num_trials", 100, "Trials (seeds).")
_QUERIES = flags.DEFINE_integer("max_queries", 100, "Budget in full (200-epoch) trainings.")
_CONFIGS = flags.DEFINE_list("num_configs", ["0", "27", "81"], "Configurations per bracket (0 = eta^s).")


def main(argv):
    del argv
    from nas.engine.chunked_loop import run_chunked
    from nas.experiment.cost_axis import FRACTIONS, budget_summary, running_axes
    from nas.experiment.report import spread_cell
    from nas.searchers import make_searcher
    from spaces.benchmarks.registry import make_benchmark

    bench = make_benchmark(f"nb201/{_DATASET.value}", test_csv=_TEST.value, fidelity_data=_FIDELITY.value)
    keys = jax.random.split(jax.random.PRNGKey(0), _TRIALS.value)  # config.seed = 0's trial keys
    top = bench.fidelities[-1]
    print(f"{bench.name}: {bench.report_name} of the incumbent, mean +- s.e. over {_TRIALS.value} trials, budget "
          f"{_QUERIES.value} full trainings")  # fmt: skip
    print(f"| bracket | promotion order | {' | '.join(f'{f:.0%}' for f in FRACTIONS)} |")
    print("|---|---|" + "---|" * len(FRACTIONS))
    for n in (int(x) for x in _CONFIGS.value):
        for order in ("best_first", "start_order"):
            s = make_searcher("successive_halving", bench.space, fidelities=bench.fidelities,
                              max_queries=_QUERIES.value, num_configs=n, promotion_order=order)  # fmt: skip
            h = run_chunked(s, bench, keys, progress=False)
            axes = running_axes({k: np.asarray(v) for k, v in vars(h).items()}, top, len(bench.fidelities))
            b = budget_summary(axes, _QUERIES.value, bench.report, 1)
            cells = [spread_cell(m, sd, k, _TRIALS.value, "se") for m, sd, k in
                     zip(b["mean"], b["std"], b["trials_with_incumbent"])]  # fmt: skip
            rungs = ", ".join(f"{size} x {bench.fidelities[f]:g}" for f, size in s.schedule_brackets[0])
            print(f"| {rungs} | {order} | {' | '.join(cells)} |", flush=True)


if __name__ == "__main__":
    cli.run(main)
