"""Speed of the many-seed runner: S seeds x Q queries of each baseline in one
compiled call (``jax.jit(jax.vmap(run))``), against the same work as a Python
loop over seeds (a jit'ed single-seed run called once per seed) and against an
independent plain-numpy implementation (``scripts/bench/numpy_baselines.py``; random
search and regularized evolution on dense product-space tables).

    python -m scripts.bench.bench_runner                      # 500 seeds x 150 queries, NB201 cifar10
    python -m scripts.bench.bench_runner --num_trials=100 --loop_seeds=10

Prints, per searcher: the XLA options its programs compile with
(``nas.engine.compile_policy.compiler_options``, as ``nas.engine.chunked_loop`` uses them), compile time
(the persistent compilation cache is disabled so this is a real compile), run
time after compilation (best and median of ``--repeats``; with the process CPU
time, since the machine may be shared), XLA's memory estimate of the program (arguments +
outputs + temporaries), the process's peak resident memory so far
(``resource.getrusage`` maxrss), the Python-loop time: ``--loop_seeds``
seeds timed, extrapolated linearly to all seeds (said so in the output), and
the numpy reference (best of ``--repeats``, wall and CPU time): queries per
second of both, the ratio, and the mean final best score of both (they should
agree within noise).
"""

from __future__ import annotations

import resource
import statistics
import time

import jax
import numpy as np
from absl import flags

from nas.experiment import cli

_BENCH = flags.DEFINE_string("benchmark", "nb201/cifar10", "Benchmark registry name.")
_SEARCHERS = flags.DEFINE_list(
    "searchers", ["random_search", "regularized_evolution", "local_search"], "Registered searchers."
)
_TRIALS = flags.DEFINE_integer("num_trials", 500, "Seeds in one compiled call.")
_QUERIES = flags.DEFINE_integer("max_queries", 150, "Queries per seed.")
_LOOP = flags.DEFINE_integer("loop_seeds", 20, "Seeds timed for the Python loop (extrapolated to num_trials).")
_REPEATS = flags.DEFINE_integer("repeats", 3, "Timed repeats of the compiled call.")


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def block(x):
    return jax.block_until_ready(x)


def main(argv):
    del argv
    jax.config.update("jax_enable_compilation_cache", False)
    from nas.engine.compile_policy import compiler_options
    from nas.engine.runner import make_search
    from nas.searchers import make_searcher
    from spaces.benchmarks.registry import make_benchmark

    bench = make_benchmark(_BENCH.value)
    s_count, q = _TRIALS.value, _QUERIES.value
    keys = jax.random.split(jax.random.PRNGKey(0), s_count)
    print(
        f"{bench.name}: {s_count} seeds x {q} queries, backend {jax.default_backend()}, {jax.device_count()} device(s)"
    )
    print(f"process peak RSS after loading the table: {peak_rss_mib():.0f} MiB")
    rows, numpy_rows = [], []
    for name in _SEARCHERS.value:
        searcher = make_searcher(name, bench.space, max_queries=q)
        run = make_search(searcher)
        opts = compiler_options(searcher)  # the XLA optimization level, as nas.engine.chunked_loop compiles it
        many = jax.jit(jax.vmap(run, in_axes=(0, None)), compiler_options=opts)
        t0 = time.perf_counter()
        compiled = many.lower(keys, bench).compile()
        compile_s = time.perf_counter() - t0
        mem = compiled.memory_analysis()
        xla_mib = (
            (mem.argument_size_in_bytes + mem.output_size_in_bytes + mem.temp_size_in_bytes) / 2**20
            if mem is not None
            else float("nan")
        )
        times, cpu = [], []
        for _ in range(_REPEATS.value):
            t0, c0 = time.perf_counter(), time.process_time()
            block(compiled(keys, bench))
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        rss = peak_rss_mib()
        # the same work as a Python loop over seeds: one jit'ed single-seed run per call
        one = jax.jit(run)
        block(one(keys[0], bench))  # compile outside the timing
        n_loop = min(_LOOP.value, s_count)
        t0 = time.perf_counter()
        for i in range(n_loop):
            block(one(keys[i], bench))
        loop_s = (time.perf_counter() - t0) * s_count / n_loop
        hist = compiled(keys, bench)
        reference = numpy_reference(name, bench, s_count, q, _REPEATS.value)
        if reference is not None:
            np_s, np_cpu, np_best = reference
            jax_best = float(np.mean(np.max(np.asarray(hist.score), axis=1)))
            qps_jax, qps_np = s_count * q / min(times), s_count * q / np_s
            print(
                f"{name}: numpy reference {np_s:.3f} s (CPU {np_cpu:.3f} s), compiled {min(times):.3f} s "
                f"(CPU {min(cpu):.3f} s); queries/s jax {qps_jax:,.0f} vs numpy {qps_np:,.0f} "
                f"(ratio {qps_jax / qps_np:.2f}); mean final best score jax {jax_best:.4f}, numpy {np_best:.4f}",
                flush=True,
            )
            numpy_rows.append((name, qps_jax, qps_np, jax_best, np_best))
        rows.append((name, compile_s, min(times), statistics.median(times), xla_mib, rss, loop_s, n_loop))
        print(
            f"{name}: XLA options {opts or 'default'}, compile {compile_s:.1f} s, run {min(times):.3f} s "
            f"(CPU {min(cpu):.3f} s, median {statistics.median(times):.3f}), "
            f"XLA memory {xla_mib:.0f} MiB, peak RSS {rss:.0f} MiB, python loop {loop_s:.1f} s "
            f"({n_loop} seeds timed, x{s_count / n_loop:g})",
            flush=True,
        )
    print()
    print(
        f"| searcher | compile (s) | {s_count} seeds, one call (s) | XLA program memory (MiB) | peak RSS (MiB) | "
        f"python loop over seeds (s) |"
    )
    print("|---|---|---|---|---|---|")
    for name, c, best, med, xm, rss, loop_s, n_loop in rows:
        note = "" if n_loop == s_count else f" (extrapolated from {n_loop} seeds)"
        print(f"| {name} | {c:.1f} | {best:.2f} (median {med:.2f}) | {xm:.0f} | {rss:.0f} | {loop_s:.1f}{note} |")
    if numpy_rows:
        print()
        print("| searcher | queries/s, compiled runner | queries/s, plain numpy | ratio | mean best (jax / numpy) |")
        print("|---|---|---|---|---|")
        for name, qj, qn, bj, bn in numpy_rows:
            print(f"| {name} | {qj:,.0f} | {qn:,.0f} | {qj / qn:.2f} | {bj:.4f} / {bn:.4f} |")


def numpy_reference(name, bench, num_seeds, num_queries, repeats=1):
    """(seconds, CPU seconds, mean final best score) of the plain-numpy implementation (best of ``repeats``,
    as for the compiled runner), or None where there is none."""
    from scripts import numpy_baselines

    space = bench.space
    dense = getattr(bench, "row_ids", None) is not None and bench.row_ids.shape[0] == 0
    if name not in ("random_search", "regularized_evolution") or not dense or bench.size != space.size:
        return None
    scores = np.asarray(bench.mean_valid(), np.float64)
    wall, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        if name == "random_search":
            best = numpy_baselines.random_search(scores, num_seeds, num_queries)
        else:
            best = numpy_baselines.regularized_evolution(scores, space.cardinalities, num_seeds, num_queries)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return min(wall), min(cpu), float(best[:, -1].mean())


if __name__ == "__main__":
    cli.run(main)
