"""The two multi-fidelity BANANAS variants side by side (``nas.searchers.mf_bananas``), with Hyperband and
BOHB for reference: the incumbent's test error at 10/25/50/100 % of a compute budget, mean +- s.e.

    python -m scripts.experiments.mf_bananas_variants --seeds 50 --benchmark nb201/cifar10 \
        --test_csv ../shared/data/nb201/nats_bench_test_acc.csv \
        --fidelity_data ../shared/data/nb201/mini_nb201_12epoch.pd

(NAS-Bench-201 at 12 and 200 epochs: ``fidelity_data``, docs/reference/benchmarks.md.) Seeds are split over the CPU
cores (``--cpu_devices``).
"""

from __future__ import annotations

import time

from absl import flags

from nas.experiment import cli

_SEEDS = flags.DEFINE_integer("seeds", 50, "Seeds per searcher.")
_BENCH = flags.DEFINE_string("benchmark", "nb201/cifar10", "A benchmark with fidelities.")
_TEST = flags.DEFINE_string("test_csv", "", "NAS-Bench-201 test accuracies (reports validation without).")
_LOW = flags.DEFINE_string("fidelity_data", "", "NAS-Bench-201's 12-epoch table (mini_nb201_12epoch.pd).")
_BUDGET = flags.DEFINE_integer("budget", 100, "Compute budget in full evaluations.")
_ONLY = flags.DEFINE_list("only", [], "Labels to run (default: all).")
_CPU = flags.DEFINE_integer("cpu_devices", 0, "CPU devices for the seeds (0 = one per core).")

SEARCHERS = {
    "mf_bananas_a": ("mf_bananas", {"variant": "highest_fidelity"}),
    "mf_bananas_b": ("mf_bananas", {"variant": "fidelity_feature"}),
    "hyperband": ("hyperband", {}),
    "bohb": ("bohb", {}),
}


def main(argv):
    del argv
    from nas.engine.devices import use_cpu_cores

    use_cpu_cores(_CPU.value)
    import jax
    import numpy as np

    from nas.engine.chunked_loop import run_chunked
    from nas.experiment.cost_axis import FRACTIONS, budget_summary, running_axes
    from nas.searchers import make_searcher
    from spaces.benchmarks.objective import fidelity_budgets
    from spaces.benchmarks.registry import make_benchmark

    kwargs = {k: v for k, v in (("test_csv", _TEST.value), ("fidelity_data", _LOW.value)) if v}
    bench = make_benchmark(_BENCH.value, **kwargs)
    budgets = fidelity_budgets(bench)
    keys = jax.random.split(jax.random.PRNGKey(0), _SEEDS.value)
    cols = " | ".join(f"{int(f * 100)} %" for f in FRACTIONS)
    print(f"{bench.name}, {bench.report_name}, budget {_BUDGET.value} full evaluations, {_SEEDS.value} seeds, "
          "mean +- s.e. over seeds; time in seconds")  # fmt: skip
    print(f"| searcher | {cols} | time (s) |\n|---|" + "---|" * (len(FRACTIONS) + 1))
    for label, (name, opts) in SEARCHERS.items():
        if _ONLY.value and label not in _ONLY.value:
            continue
        s = make_searcher(name, bench.space, fidelities=budgets, max_queries=_BUDGET.value, **opts)
        t0 = time.perf_counter()
        h = run_chunked(s, bench, keys, progress=True, label=label)
        secs = time.perf_counter() - t0
        hist = {k: np.asarray(v) for k, v in vars(h).items()}
        summ = budget_summary(running_axes(hist, budgets[-1], len(budgets)), _BUDGET.value, bench.report, 1)
        n = np.asarray(summ["trials_with_incumbent"])
        cells = " | ".join(f"{m:.3f} +- {sd / np.sqrt(k):.3f}" for m, sd, k in zip(summ["mean"], summ["std"], n))
        print(f"| {label} | {cells} | {secs:.0f} |", flush=True)


if __name__ == "__main__":
    cli.run(main)
