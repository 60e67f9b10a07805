"""Speed and memory of TNAS (Shala, Elsken, Hutter & Grabocka, 2023): meta-training and meta-test.

    python -m scripts.bench.bench_tnas --config=configs/nb201_tnas.py:cifar10 --outer_steps=100 --seeds=100 \
        --queries=100
    python -m scripts.bench.bench_tnas --config=configs/nb201_tnas.py:cifar10 --outer_steps=50 --seeds=10 --queries=30

Two phases, each printed as one ``RESULT`` JSON line per run:

1. **Meta-training** (``surrogates.meta_training.meta_train``, REPTILE on the config's source tasks,
   target left out) of ``--outer_steps`` outer steps into a temporary parameters file, twice: the
   first run compiles (or loads from ``JAX_COMPILATION_CACHE_DIR``), the second resumes the same file
   for another ``--outer_steps`` steps with the programs compiled: its wall time is the steady cost.
2. **Meta-test**: the ``tnas`` searcher with that file runs ``--seeds`` seeds x ``--queries`` queries
   (``nas.engine.chunked_loop.run_chunked``, seeds vmapped), ``--repeats`` times with new seeds (the first compiles).

Per run: wall time, XLA compilations (count and seconds, jax's monitoring events; persistent-cache hits
counted apart; a compilation is one program, so the count says how many programs a phase built), CPU
time, peak resident memory of the process so far (``ru_maxrss``) and the load average before and
after (the CPU may be shared: quote it with the figures). Meta-test also prints the incumbent's
reported metric (mean +- standard error over seeds; test error % with ``--test_csv``).
"""

from __future__ import annotations

import json
import os
import resource
import tempfile
import time

import jax
import numpy as np
from absl import flags
from ml_collections import config_flags

from nas.engine.devices import use_cpu_cores
from nas.experiment import cli
from scripts.bench.compile_stats import CompileStats

_CONFIG = config_flags.DEFINE_config_file(
    "config", "configs/nb201_tnas.py:cifar10", "TNAS config (configs/<suite>_tnas.py:<target>)."
)
_OUTER = flags.DEFINE_integer("outer_steps", 100, "meta-training outer steps per timed run (0: skip, random kernel)")
_SEEDS = flags.DEFINE_integer("seeds", 100, "meta-test seeds (vmapped)")
_QUERIES = flags.DEFINE_integer("queries", 100, "meta-test query budget per seed")
_REPEATS = flags.DEFINE_integer("repeats", 1, "meta-test runs, new seeds each (the first compiles)")
_OPTIONS = flags.DEFINE_string("options", "{}", "JSON options for the tnas searcher (e.g. finetune_steps)")
_TEST_CSV = flags.DEFINE_string("test_csv", "", "NB201 test CSV (reports the incumbent's test error)")
_SEED = flags.DEFINE_integer("seed", 0, "PRNG seed of the first meta-test run (run r uses seed + r)")
_PROGRESS = flags.DEFINE_bool("progress", True, "Meta-test progress bar on stderr.")
_CPU_DEVICES = flags.DEFINE_integer("cpu_devices", 1, "CPU devices (TNAS does not split seeds over devices)")


class Timer:
    """Wall, CPU, compilations and load around one phase; ``row()`` the figures as a dict."""

    def __init__(self, stats: CompileStats):
        self.stats = stats

    def __enter__(self):
        self.c0, self.s0, self.h0 = self.stats.snapshot()
        self.load0 = os.getloadavg()[0]
        self.t0, self.cpu0 = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall, self.cpu = time.perf_counter() - self.t0, time.process_time() - self.cpu0
        self.c1, self.s1, self.h1 = self.stats.snapshot()
        self.load1 = os.getloadavg()[0]

    def row(self) -> dict:
        return {
            "wall_s": round(self.wall, 1),
            "compile_s": round(self.s1 - self.s0, 1),
            "compilations": self.c1 - self.c0,
            "cache_hits": self.h1 - self.h0,
            "cpu_s": round(self.cpu, 1),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0),
            "load": [round(self.load0, 1), round(self.load1, 1)],
        }


def _print(phase: str, row: dict, extra: str = "") -> None:
    print(
        f"  {phase}: wall {row['wall_s']:.1f} s (compile {row['compile_s']:.1f} s, {row['compilations']} "
        f"compilations, {row['cache_hits']} persistent-cache hits), CPU {row['cpu_s']:.1f} s, peak RSS "
        f"{row['peak_rss_mb']} MB, load {row['load'][0]:.1f} -> {row['load'][1]:.1f}{extra}",
        flush=True,
    )
    print("RESULT " + json.dumps({"phase": phase, **row}), flush=True)


def bench_meta_training(config, stats: CompileStats, out_path: str):
    from nas.experiment.tnas_settings import settings
    from spaces.benchmarks.registry import make_benchmark
    from surrogates.meta_training import meta_train, source_tasks

    target, suite, rep, model, meta = settings(config)
    sources = source_tasks(suite, target)
    with Timer(stats) as t:
        tables = {s: make_benchmark(s) for s in sources}
    _print("load_sources", t.row(), f" ({len(sources)} tables)")
    space = next(iter(tables.values())).space
    print(f"\n== meta-training: target {target}, sources {sources}, {_OUTER.value} outer steps per run", flush=True)
    for run, steps in enumerate((_OUTER.value, 2 * _OUTER.value)):
        chunk = min(meta["chunk_steps"], _OUTER.value)
        with Timer(stats) as t:
            meta_train(out_path, space, tables, target, suite, model, rep, steps, chunk, meta["seed"],
                       meta["init_design"], meta["num_strings"], meta["failed_scores"], progress=False)  # fmt: skip
        _print(f"meta_train_run{run}", t.row(), f" ({_OUTER.value} outer steps, chunks of {chunk})")
    return space


def bench_meta_test(config, stats: CompileStats, space, params_file: str) -> None:
    from nas.engine.chunked_loop import chunk_bounds, run_chunked
    from nas.engine.incumbent import incumbent_curve
    from nas.searchers import make_searcher
    from spaces.benchmarks.registry import make_benchmark

    opts = {"test_csv": _TEST_CSV.value} if _TEST_CSV.value else {}
    bench = make_benchmark(config.benchmark, **opts)
    if bench.space.name != space.name:
        raise ValueError(f"target {config.benchmark} is on space {bench.space.name}, the sources on {space.name}")
    options = {"params_file": params_file, **json.loads(_OPTIONS.value)}
    with Timer(stats) as t:
        s = make_searcher("tnas", bench.space, max_queries=_QUERIES.value, **options)
    what = "psi of every string of the space" if s.acq_opt == "exhaustive" else f"{s.acq_opt} candidates"
    _print("searcher_setup", t.row(), f" ({what})")
    print(
        f"\n== meta-test: {_SEEDS.value} seeds x {_QUERIES.value} queries on {config.benchmark}, "
        f"chunks at steps {chunk_bounds(s)}, options {json.loads(_OPTIONS.value)}",
        flush=True,
    )
    for rep in range(_REPEATS.value):
        keys = jax.random.split(jax.random.PRNGKey(_SEED.value + rep), _SEEDS.value)
        with Timer(stats) as t:
            h = run_chunked(s, bench, keys, progress=_PROGRESS.value)
            jax.block_until_ready(h.score)
        _, test = incumbent_curve(h.score, h.report_score)
        vals = np.asarray(bench.report(np.asarray(test[:, -1])), np.float64)
        row = t.row()
        row.update(
            seeds=_SEEDS.value,
            queries=_QUERIES.value,
            metric=bench.report_name,
            mean=float(vals.mean()),
            se=float(vals.std(ddof=1) / np.sqrt(len(vals))) if len(vals) > 1 else float("nan"),
            seed_steps_per_s=round(_SEEDS.value * s.num_steps / t.wall, 2),
        )
        _print(
            f"meta_test_run{rep}",
            row,
            f"; {row['seed_steps_per_s']} seed-steps/s; incumbent {bench.report_name} "
            f"{row['mean']:.3f} +- {row['se']:.3f}",
        )


def main(argv):
    del argv
    use_cpu_cores(_CPU_DEVICES.value)  # before any JAX computation
    stats = CompileStats()
    config = _CONFIG.value
    print(
        f"jax {jax.__version__}, devices {jax.devices()}, {os.cpu_count()} CPU cores visible, "
        f"config {config.benchmark}, compilation cache {os.environ.get('JAX_COMPILATION_CACHE_DIR') or 'off'}",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="bench_tnas_") as tmp:
        params_file = os.path.join(tmp, "tnas_params.npz")
        if _OUTER.value > 0:
            space = bench_meta_training(config, stats, params_file)
        else:
            params_file = ""
            from spaces.benchmarks.registry import make_benchmark

            space = make_benchmark(config.benchmark).space
        bench_meta_test(config, stats, space, params_file)
    return 0


if __name__ == "__main__":
    cli.run(main)
