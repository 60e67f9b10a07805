"""NASBOT's compiled programs: how many, and what each costs to compile (docs/reference/nasbot_alphax.md).

    python -m scripts.bench.bench_nasbot_compile --seeds=20
    python -m scripts.bench.bench_nasbot_compile --seeds=500 --benchmark=hpolib/naval_propulsion

Walks the chunked loop's chunks of one NASBOT run (``nas.engine.chunked_loop.chunk_bounds``, ``chunk_for``: one
program per padded data size, reused by every chunk of that size) and compiles each program the run needs,
ahead of time, with the persistent compilation cache off: per program its data size (0 = the random
steps), the chunks that use it, tracing + lowering seconds and XLA compile seconds (wall and the process's
CPU time: the machine may be shared, so CPU seconds are the figure to compare) and the compile count from
jax's monitoring events (``scripts.bench.compile_stats``); then every chunk asks for its program again,
which must compile nothing. Nothing is run.
"""

from __future__ import annotations

import os
import time

import jax
from absl import flags

from nas.engine.devices import shard_keys, use_cpu_cores
from nas.experiment import cli
from scripts.bench.compile_stats import CompileStats

_SEEDS = flags.DEFINE_integer("seeds", 20, "seeds (trials) vmapped in each program")
_QUERIES = flags.DEFINE_integer("queries", 150, "query budget per seed")
_BENCH = flags.DEFINE_string("benchmark", "nb201/cifar10", "benchmark name")
_CPU_DEVICES = flags.DEFINE_integer("cpu_devices", 0, "CPU devices to split the seeds over (0 = one per core)")


def main(argv):
    del argv
    use_cpu_cores(_CPU_DEVICES.value)
    jax.config.update("jax_enable_compilation_cache", False)  # every program really compiles
    from nas.engine.chunked_loop import chunk_bounds, chunk_for, init_program
    from nas.searchers import make_searcher
    from spaces.benchmarks.registry import make_benchmark

    stats = CompileStats()
    bench = make_benchmark(_BENCH.value)
    s = make_searcher("nasbot", bench.space, max_queries=_QUERIES.value)
    keys = shard_keys(s, jax.random.split(jax.random.PRNGKey(0), _SEEDS.value))
    sharding = getattr(keys, "sharding", None)
    state = init_program(s, sharding if isinstance(sharding, jax.sharding.NamedSharding) else None)(keys)
    bounds = chunk_bounds(s)
    print(f"jax {jax.__version__}, {_SEEDS.value} seeds on {len(keys.sharding.device_set)} device(s), {bench.name}, "
          f"chunks at steps {bounds}, load {os.getloadavg()[0]:.1f}", flush=True)  # fmt: skip
    programs = {}  # id -> (rows, chunks)
    rows_of = {}
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        program = chunk_for(s, lo, hi)
        rows_of.setdefault(id(program), s.program_for(lo, hi).variant)
        programs.setdefault(id(program), [program, []])[1].append((lo, hi))
    print("| data rows | chunks (steps) | trace + lower s | compile s (wall) | compile s (CPU) | XLA compiles |")
    print("|---|---|---|---|---|---|")
    total_wall = total_cpu = 0.0
    for pid, (program, chunks) in programs.items():
        c0, _, _ = stats.snapshot()
        t0 = time.perf_counter()
        lowered = program.lower(keys, state, bench)
        t1, p1 = time.perf_counter(), time.process_time()
        lowered.compile()
        t2, p2 = time.perf_counter(), time.process_time()
        c1, _, _ = stats.snapshot()
        total_wall, total_cpu = total_wall + t2 - t1, total_cpu + p2 - p1
        rows = rows_of[pid]
        print(f"| {'all (generic)' if rows is None else rows} | {len(chunks)} ({chunks[0][0]}-{chunks[-1][1]}) | "
              f"{t1 - t0:.1f} | {t2 - t1:.1f} | {p2 - p1:.1f} | {c1 - c0} |", flush=True)  # fmt: skip
    again = {id(chunk_for(s, lo, hi)) for lo, hi in zip(bounds[:-1], bounds[1:])}
    print(f"\n{len(programs)} programs for {len(bounds) - 1} chunks; compile {total_wall:.1f} s wall, "
          f"{total_cpu:.1f} s CPU; asked again, the chunks get the same {len(again & set(programs))} programs "
          f"({len(again - set(programs))} new); load {os.getloadavg()[0]:.1f}")  # fmt: skip


if __name__ == "__main__":
    cli.run(main)
