"""Speed of multi-objective search: NSGA-II (and MO-REA), S seeds on NAS-Bench-201 (error against latency) in
one compiled call (``jax.jit(jax.vmap(make_search(searcher, ("latency",))))``), beside Optuna's
``NSGAIISampler`` run by the ``optuna_mo`` peer on the same table, budget and population.

    python -m scripts.bench.bench_multiobjective                      # cifar10, 500 seeds x 150 queries
    python -m scripts.bench.bench_multiobjective --num_trials=100 --peer_seeds=5 --metric=model_size

Prints, per searcher: compile time (the persistent compilation cache is disabled, so this is a real
compile), run time of the S seeds after compilation (best and median of ``--repeats``, with the process
CPU time, since the machine may be shared), XLA's memory estimate of the program, the peer's time per
seed (``--peer_seeds`` seeds, one after another, as the peer runs), the ratio of the peer's time per seed
to ours (the compiled call's time over S), and both final hypervolume gaps (%) to the table's true front.
"""

from __future__ import annotations

import statistics
import time

import jax
import numpy as np
from absl import flags

from nas.experiment import cli

_DATASET = flags.DEFINE_enum("dataset", "cifar10", ["cifar10", "cifar100", "imagenet16"], "NAS-Bench-201 dataset.")
_METRIC = flags.DEFINE_enum("metric", "latency", ["latency", "model_size"], "The second objective.")
_TEST = flags.DEFINE_string("test_data", "../shared/data/nb201/nats_bench_test_acc.csv", "NB201 test accuracies.")
_SEARCHERS = flags.DEFINE_list("searchers", ["nsga2", "mo_regularized_evolution"], "Compiled searchers.")
_TRIALS = flags.DEFINE_integer("num_trials", 500, "Seeds in one compiled call.")
_PEER_SEEDS = flags.DEFINE_integer("peer_seeds", 10, "Seeds timed for the Optuna peer (one at a time).")
_QUERIES = flags.DEFINE_integer("max_queries", 150, "Queries per seed.")
_POPULATION = flags.DEFINE_integer("population_size", 20, "NSGA-II's population, ours and Optuna's.")
_REPEATS = flags.DEFINE_integer("repeats", 3, "Timed repeats of the compiled call.")


def final_gap(h: dict, problem, q: int) -> float:
    """Mean over seeds of the hypervolume gap (%) of the front found with ``q`` queries."""
    from nas.experiment import pareto_report as pr

    rows = np.full((np.shape(h["score"])[0], 1), q - 1)
    return float(np.mean(pr.gap(pr.hypervolume_at(h, problem, rows), problem)))


def time_ours(name: str, bench, keys, q: int, problem) -> dict:
    from nas.engine.compile_policy import compiler_options
    from nas.engine.runner import make_search
    from nas.searchers import make_searcher

    extra = {"population_size": _POPULATION.value} if name == "nsga2" else {}
    searcher = make_searcher(name, bench.space, max_queries=q, **extra)
    metrics = (_METRIC.value,)
    many = jax.jit(jax.vmap(make_search(searcher, metrics), in_axes=(0, None)),
                   compiler_options=compiler_options(searcher))  # fmt: skip
    t0, c0 = time.perf_counter(), time.process_time()
    compiled = many.lower(keys, bench).compile()
    compile_s, compile_cpu = time.perf_counter() - t0, time.process_time() - c0
    mem = compiled.memory_analysis()
    times, cpu = [], []
    for _ in range(_REPEATS.value):
        t0, c0 = time.perf_counter(), time.process_time()
        hist = jax.block_until_ready(compiled(keys, bench))
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    h = {"score": hist.score, "report_score": hist.report_score, "metrics": dict(hist.metrics)}
    out = {
        "compile_s": compile_s, "compile_cpu": compile_cpu, "run_s": min(times), "median_s": statistics.median(times),
        "cpu_s": min(cpu), "xla_mib": (mem.argument_size_in_bytes + mem.output_size_in_bytes
                                       + mem.temp_size_in_bytes) / 2**20, "gap": final_gap(h, problem, q),
    }  # fmt: skip
    print(f"{name}: compile {compile_s:.1f} s (CPU {compile_cpu:.1f} s), run {out['run_s']:.3f} s (CPU "
          f"{out['cpu_s']:.3f} s, median {out['median_s']:.3f} s), XLA memory {out['xla_mib']:.0f} MiB, "
          f"final gap {out['gap']:.2f} %", flush=True)  # fmt: skip
    return out


def main(argv):
    del argv
    jax.config.update("jax_enable_compilation_cache", False)
    from nas.experiment import pareto_report as pr
    from nas.experiment import peers
    from spaces.benchmarks.registry import make_benchmark

    bench = make_benchmark(f"nb201/{_DATASET.value}", test_csv=_TEST.value)
    s_count, q = _TRIALS.value, _QUERIES.value
    problem = pr.table_problem(bench, (_METRIC.value,))
    keys = jax.random.split(jax.random.PRNGKey(0), s_count)
    print(f"{bench.name}: error vs {_METRIC.value}, {s_count} seeds x {q} queries, backend {jax.default_backend()}, "
          f"{jax.device_count()} device(s)")  # fmt: skip
    ours = {name: time_ours(name, bench, keys, q, problem) for name in _SEARCHERS.value}
    peer = peers.make_peer("optuna_mo", bench.space, max_queries=q, sampler="nsga2",
                           population_size=_POPULATION.value, seeds_per_group=1)  # fmt: skip
    n = _PEER_SEEDS.value
    peers.run_peer(peer, bench, keys[-1:], progress=False, metrics=(_METRIC.value,))  # compiles its query programs
    t0, c0 = time.perf_counter(), time.process_time()
    ph = peers.run_peer(peer, bench, keys[:n], progress=False, metrics=(_METRIC.value,))
    peer_s, peer_cpu = (time.perf_counter() - t0) / n, (time.process_time() - c0) / n
    peer_gap = final_gap({"score": ph.score, "report_score": ph.report_score, "metrics": ph.metrics}, problem, q)
    print(f"optuna NSGA-II: {peer_s:.2f} s/seed (CPU {peer_cpu:.2f} s; {n} seeds), final gap {peer_gap:.2f} %")
    print()
    print(f"| searcher | compile (s) | {s_count} seeds, one call (s) | CPU (s) | XLA memory (MiB) | "
          "Optuna NSGA-II per seed (s) | Optuna / ours, per seed | final gap ours / Optuna (%) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for name, o in ours.items():
        ratio = peer_s / (o["run_s"] / s_count)
        print(f"| {name} | {o['compile_s']:.1f} (CPU {o['compile_cpu']:.1f}) | {o['run_s']:.2f} (median "
              f"{o['median_s']:.2f}) | {o['cpu_s']:.2f} | {o['xla_mib']:.0f} | {peer_s:.2f} (CPU {peer_cpu:.2f}; "
              f"{n} seeds) | {ratio:,.0f} | {o['gap']:.2f} / {peer_gap:.2f} |")  # fmt: skip


if __name__ == "__main__":
    cli.run(main)
