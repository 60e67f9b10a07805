"""Speed of the tabular benchmarks: load time and batched query throughput.

    python -m scripts.bench.bench_benchmarks [--names=nb201/cifar10,...] [--all] [--batches=4096,65536] [--reps=20]

For each table: the load time from the ``.npz`` cache and from the package
pickles (a fresh temporary cache), then ``jax.jit(bench.query)`` on batches of
random token strings (each token uniform over its values, so spaces with
invalid strings get some) for the "mean" and "random" protocols, in queries
per second (compile excluded; median of ``--reps`` timed calls). Also the
NAS-Bench-101 canonical index, ``jax.jit(jax.vmap(spaces.nb101.SPACE.string_id))``
on valid cells from ``SPACE.sample``. By default one table per family is timed (tables of a family share
code and shapes); ``--all`` times every registered table except nb101.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time

import jax
import numpy as np
from absl import app, flags

from nas.experiment import cli
from spaces.benchmarks import registry

_NAMES = flags.DEFINE_list("names", [], "Tables to time (default: one per family).")
_ALL = flags.DEFINE_bool("all", False, "Time every registered table except nb101.")
_BATCHES = flags.DEFINE_list("batches", ["4096", "65536"], "Query batch sizes.")
_REPS = flags.DEFINE_integer("reps", 20, "Timed calls per measurement (the median is reported).")

DEFAULT = (
    "nb201/cifar10",
    "hpolib/protein_structure",
    "hpobench/car",
    "nasbench_graph/cora",
    "nasbench_graph/proteins",
    "analognas/analog",
)


def timed(fn, *args, reps: int) -> float:
    """Median seconds of ``fn(*args)`` after one warm-up (compile) call."""
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def load_times(name: str) -> tuple[float, float]:
    """(seconds from the cache, seconds from the package files into a fresh cache)."""
    registry.make_benchmark(name)  # make sure the user cache holds it
    t0 = time.perf_counter()
    registry.make_benchmark(name)
    cached = time.perf_counter() - t0
    old = os.environ.get("NASJAX_CACHE")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["NASJAX_CACHE"] = tmp
        try:
            if name.startswith("nasbench_graph/"):
                from spaces.benchmarks import nasbench_graph

                nasbench_graph.space.cache_clear()  # rebuild the id lookup too
            t0 = time.perf_counter()
            registry.make_benchmark(name)
            cold = time.perf_counter() - t0
        finally:
            if old is None:
                del os.environ["NASJAX_CACHE"]
            else:
                os.environ["NASJAX_CACHE"] = old
            if name.startswith("nasbench_graph/"):
                nasbench_graph.space.cache_clear()
    return cached, cold


def bench_table(name: str, batches: list[int], reps: int) -> dict:
    cached, cold = load_times(name)
    bench = registry.make_benchmark(name)
    row = {"name": name, "size": bench.size, "load_cached_s": cached, "load_cold_s": cold}
    for b in batches:
        tokens = jax.jit(jax.vmap(bench.space.sample_unconstrained))(jax.random.split(jax.random.PRNGKey(b), b))
        for protocol in ("mean", "random"):
            q = jax.jit(bench.with_protocol(protocol).query)
            sec = timed(q, jax.random.PRNGKey(1), tokens, reps=reps)
            row[f"{protocol}@{b}"] = b / sec
    return row


def bench_nb101(batches: list[int], reps: int) -> list[str]:
    from spaces import nb101

    out = []
    sid = jax.jit(jax.vmap(nb101.SPACE.string_id))
    for b in batches:
        cells = jax.jit(jax.vmap(nb101.SPACE.sample))(jax.random.split(jax.random.PRNGKey(b), b))
        ids = np.asarray(sid(cells))
        sec = timed(sid, cells, reps=reps)
        valid = int((ids >= 0).sum())
        out.append(f"NB101 canonical index (string_id), batch {b:>6}: {b / sec:>12,.0f} cells/s ({valid} valid)")
    return out


def main(argv) -> None:
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    batches = [int(b) for b in _BATCHES.value]
    known = registry.available_benchmarks()
    tables = [n for n in known if not n.startswith(("nb101", "mlp/"))]  # mlp/*: scripts/bench/bench_training.py
    names = tables if _ALL.value else (_NAMES.value or list(DEFAULT))
    bad = [n for n in names if n not in tables]
    if bad:
        raise app.UsageError(f"cannot time {bad}; choose from {tables}")
    print(f"jax {jax.__version__}, backend {jax.default_backend()}, devices {jax.devices()}")
    cols = [f"{p}@{b}" for b in batches for p in ("mean", "random")]
    head = ["table", "size", "load cached s", "load cold s"] + [f"{c} q/s" for c in cols]
    lines = [head]
    for name in names:
        r = bench_table(name, batches, _REPS.value)
        lines.append(
            [name, f"{r['size']:,}", f"{r['load_cached_s']:.3f}", f"{r['load_cold_s']:.2f}"]
            + [f"{r[c]:,.0f}" for c in cols]
        )
        print("  " + "  ".join(lines[-1]), flush=True)
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    print()
    for line in lines:
        print(" | ".join(v.rjust(w) if i else v.ljust(w) for i, (v, w) in enumerate(zip(line, widths))))
    print()
    for line in bench_nb101(batches, _REPS.value):
        print(line)


if __name__ == "__main__":
    cli.run(main)
