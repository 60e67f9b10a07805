"""Speed of BANANAS, GP-BO and NASBOT: many seeds x 150 queries, run as ``scripts.train`` runs them.

    python -m scripts.bench.bench_bo --searchers=gp_bo --seeds=100 --queries=150
    python -m scripts.bench.bench_bo --searchers=nasbot --seeds=100 --repeats=1
    python -m scripts.bench.bench_bo --searchers=bananas,gp_bo --cpu_devices=1 --repeats=1

Each searcher runs ``nas.engine.chunked_loop.run_chunked`` (compiled chunks cut at the padded-data
buckets, seeds split over the devices as ``nas.engine.devices.shard_keys`` decides) ``--repeats`` times
with new seeds each time: the first run includes compilation (or loading compiled programs from
``JAX_COMPILATION_CACHE_DIR``), later ones reuse the compiled programs. Prints per run: wall
time, the time spent in XLA compilation and the number of compilations (jax's monitoring events;
persistent-cache hits are counted apart), the process's CPU time, peak resident memory
(``ru_maxrss``, the process so far), the load average before and after (the CPU may be shared:
quote it with the figures) and the mean +- standard error over seeds of the incumbent's
reported metric (e.g. test error % with ``--test_csv``, else validation). Benchmark: NAS-Bench-201
cifar10 (package data) unless ``--benchmark``.
"""

from __future__ import annotations

import json
import os
import resource
import time

import jax
import numpy as np
from absl import flags

from nas.engine.devices import seed_mesh_size, shard_keys, use_cpu_cores
from nas.experiment import cli
from scripts.bench.compile_stats import CompileStats

_SEARCHERS = flags.DEFINE_list("searchers", ["bananas", "gp_bo"], "searchers to time")
_SEEDS = flags.DEFINE_integer("seeds", 100, "seeds (trials) per run, vmapped")
_QUERIES = flags.DEFINE_integer("queries", 150, "query budget per seed")
_BENCH = flags.DEFINE_string("benchmark", "nb201/cifar10", "benchmark name")
_TEST_CSV = flags.DEFINE_string("test_csv", "", "NB201 test CSV (reports the incumbent's test error)")
_SEED = flags.DEFINE_integer("seed", 0, "PRNG seed of the first run (run r uses seed + r)")
_REPEATS = flags.DEFINE_integer("repeats", 2, "runs per searcher, new seeds each (the first compiles)")
_EPOCHS = flags.DEFINE_integer("epochs", 0, "override BANANAS' MLP epochs (0 = searcher default)")
_OPTIONS = flags.DEFINE_string("options", "{}", "JSON options passed to every searcher")
_CPU_DEVICES = flags.DEFINE_integer("cpu_devices", 0, "CPU devices to split the seeds over (0 = one per core)")


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def bench_one(name: str, bench, stats: CompileStats) -> list[dict]:
    from nas.engine.chunked_loop import chunk_bounds, run_chunked
    from nas.engine.incumbent import incumbent_curve
    from nas.searchers import make_searcher

    opts = json.loads(_OPTIONS.value)
    if _EPOCHS.value and name == "bananas":
        opts["epochs"] = _EPOCHS.value
    s = make_searcher(name, bench.space, max_queries=_QUERIES.value, **opts)
    bounds = chunk_bounds(s)
    devices = seed_mesh_size(_SEEDS.value) if s.splits_over_devices else 1
    print(
        f"\n== {name}: {_SEEDS.value} seeds x {_QUERIES.value} queries on {devices} device(s), "
        f"chunks at steps {bounds}, options {opts}",
        flush=True,
    )
    rows = []
    for rep in range(_REPEATS.value):
        keys = jax.random.split(jax.random.PRNGKey(_SEED.value + rep), _SEEDS.value)
        c0, s0, h0 = stats.snapshot()
        load0 = os.getloadavg()[0]
        t0, cpu0 = time.perf_counter(), time.process_time()
        h = run_chunked(s, bench, keys, progress=False)
        jax.block_until_ready(h.score)
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        c1, s1, h1 = stats.snapshot()
        _, test = incumbent_curve(h.score, h.report_score)
        rep_vals = np.asarray(bench.report(np.asarray(test[:, -1])), np.float64)
        row = {
            "searcher": name,
            "run": rep,
            "devices": len(shard_keys(s, keys).sharding.device_set),
            "wall_s": round(wall, 1),
            "compile_s": round(s1 - s0, 1),
            "compilations": c1 - c0,
            "cache_hits": h1 - h0,
            "cpu_s": round(cpu, 1),
            "peak_rss_mb": round(_peak_mb()),
            "load": [round(load0, 1), round(os.getloadavg()[0], 1)],
            "metric": bench.report_name,
            "mean": float(rep_vals.mean()),
            "se": float(rep_vals.std(ddof=1) / np.sqrt(len(rep_vals))) if len(rep_vals) > 1 else float("nan"),
        }
        rows.append(row)
        print(
            f"  run {rep}: wall {wall:.1f} s (compile {row['compile_s']:.1f} s, {row['compilations']} compilations, "
            f"{row['cache_hits']} persistent-cache hits), CPU {cpu:.1f} s, peak RSS {row['peak_rss_mb']} MB, "
            f"load {load0:.1f} -> {row['load'][1]:.1f}; incumbent {bench.report_name} "
            f"{row['mean']:.3f} +- {row['se']:.3f}",
            flush=True,
        )
        print("RESULT " + json.dumps(row), flush=True)
    return rows


def main(argv):
    del argv
    use_cpu_cores(_CPU_DEVICES.value)  # before any JAX computation
    from spaces.benchmarks.registry import make_benchmark

    stats = CompileStats()
    opts = {"test_csv": _TEST_CSV.value} if _TEST_CSV.value else {}
    bench = make_benchmark(_BENCH.value, **opts)
    print(
        f"jax {jax.__version__}, devices {jax.devices()}, {os.cpu_count()} CPU cores visible, "
        f"benchmark {_BENCH.value}, compilation cache {os.environ.get('JAX_COMPILATION_CACHE_DIR') or 'off'}"
    )
    for name in _SEARCHERS.value:
        bench_one(name, bench, stats)
    return 0


if __name__ == "__main__":
    cli.run(main)
