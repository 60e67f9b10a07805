"""Speed of BANANAS and GP-BO: many seeds x 150 queries, one compiled call per bucket segment.

    python -m scripts.bench_bo --searchers bananas,gp_bo --seeds 100 --queries 150

Prints, per searcher: each bucket segment (fit rows, steps, wall seconds including its
compilation), total wall time, the number of XLA compilations (jax's compile log), peak resident
memory of the process (``ru_maxrss``) and the machine's load average before and after (the CPU is
shared: say how loaded it was when quoting figures). A second pass with new seeds shows the run
time without compilation. Benchmark: NAS-Bench-201 cifar10 (package data).
"""

from __future__ import annotations

import argparse
import logging
import os
import resource
import time

import jax
import numpy as np

from nas.devices import use_cpu_cores
from nas.runner import incumbent_curve
from nas.searcher import make_searcher
from spaces.benchmarks.registry import make_benchmark
from surrogates.padding import run_segments, segment_plan


class _CompileCounter(logging.Handler):
    def __init__(self):
        super().__init__()
        self.count = 0

    def emit(self, record):
        if "Compiling" in record.getMessage():
            self.count += 1


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def bench_one(name: str, bench, seeds: int, queries: int, seed: int, extra: dict) -> None:
    s = make_searcher(name, bench.space, max_queries=queries, **extra)
    plan = segment_plan(s)
    print(f"\n== {name}: {seeds} seeds x {queries} queries, encoding={s.encoding}, plan (bucket, steps)={plan}")
    counter = _CompileCounter()
    logger = logging.getLogger("jax._src.interpreters.pxla")
    logger.addHandler(counter)
    logger.propagate = False
    for rep in range(2):
        keys = jax.random.split(jax.random.PRNGKey(seed + rep), seeds)
        counter.count = 0
        load0 = os.getloadavg()[0]
        t0 = time.perf_counter()
        marks = [t0]

        def on_segment(i, bucket, steps, marks=marks):
            marks.append(time.perf_counter())
            print(f"   segment {i}: bucket {bucket:4d}, {steps:2d} steps, {marks[-1] - marks[-2]:7.1f} s", flush=True)

        with jax.log_compiles(True):
            h = run_segments(s, bench, keys, on_segment=on_segment)
            jax.block_until_ready(h.valid)
        wall = time.perf_counter() - t0
        _, test = incumbent_curve(h.score, h.report_score)
        err = bench.report(np.asarray(test[:, -1]))
        what = "first run (with compilation)" if rep == 0 else "second run (new seeds, compiled)"
        print(
            f"  {what}: wall {wall:.1f} s, compilations {counter.count}, peak RSS {_peak_mb():.0f} MB, "
            f"load avg {load0:.1f} -> {os.getloadavg()[0]:.1f}; final incumbent {bench.report_name} "
            f"{err.mean():.3f} +- {err.std(ddof=1) / np.sqrt(seeds):.3f}",
            flush=True,
        )
    logger.removeHandler(counter)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--searchers", default="bananas,gp_bo")
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--queries", type=int, default=150)
    ap.add_argument("--benchmark", default="nb201/cifar10")
    ap.add_argument("--test_csv", default="")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=0, help="override the MLP epochs (0 = searcher default)")
    ap.add_argument("--cpu_devices", type=int, default=0, help="CPU devices to split the seeds over (0 = one per core)")
    args = ap.parse_args(argv)
    use_cpu_cores(args.cpu_devices)
    opts = {"test_csv": args.test_csv} if args.test_csv else {}
    bench = make_benchmark(args.benchmark, **opts)
    print(f"jax {jax.__version__}, devices {jax.devices()}, cpus {os.cpu_count()}, benchmark {args.benchmark}")
    for name in args.searchers.split(","):
        extra = {"epochs": args.epochs} if (args.epochs and name == "bananas") else {}
        bench_one(name, bench, args.seeds, args.queries, args.seed, extra)


if __name__ == "__main__":
    main()
