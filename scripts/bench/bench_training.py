"""Speed of the MLP-training objective: B configurations trained in one vmapped program vs one at a time.

    python -m scripts.bench.bench_training [--dataset=diabetes] [--batch=64] [--sklearn_configs=16] [--reps=3] \
        [--max_iter=200] [--segment_size=0]

``--batch`` configurations are drawn from the Section VIII space (``spaces.hpo.mlp_space``, seed
``--seed``) and trained on ``mlp/<dataset>`` (``spaces.benchmarks.mlp_training``) three ways:

- vmapped: ``jax.jit(objective.query)`` on the whole ``tokens[B, N]`` (one program trains all B,
  sorted by ``max_iter`` and width into segments of ``--segment_size`` rows, each run to its own
  longest ``max_iter`` at its own widest width; with ``--max_iter=k`` every configuration trains k
  steps);
- one at a time: the same jitted query on ``tokens[1, N]``, B calls (each runs its own ``max_iter`` at
  its own width);
- scikit-learn: ``MLPRegressor`` with the same width, activation, solver, learning rate, momentum /
  beta_1, L2 penalty and batch size, on the same standardized fit data, for as many epochs as give
  the same number of rows (``ceil(max_iter * batch_size / n)``; ``tol=0``, no early stopping); it
  has no L1 penalty. Timed on the first ``--sklearn_configs`` configurations.

Prints trainings per second of wall time and per CPU-second of this process (compile excluded,
reported apart; the fastest of ``--reps`` timed calls for
the JAX paths), the speedups, the compiled programs' temporary memory (XLA's memory analysis) and the
process's peak resident memory. Figures depend on the machine's load: run on an idle machine.
"""

from __future__ import annotations

import math
import os
import resource
import time
import warnings

import jax
import numpy as np
from absl import flags

from nas.experiment import cli

_DATASET = flags.DEFINE_enum("dataset", "diabetes", ["diabetes", "boston", "naval"], "Data set of mlp/<dataset>.")
_BATCH = flags.DEFINE_integer("batch", 64, "Configurations trained (B).")
_SKLEARN = flags.DEFINE_integer("sklearn_configs", 16, "Configurations timed with scikit-learn (0 = skip).")
_REPS = flags.DEFINE_integer("reps", 3, "Timed calls of the vmapped program (median).")
_SEED = flags.DEFINE_integer("seed", 0, "Seed of the sampled configurations and the training key.")
_SEGMENT = flags.DEFINE_integer("segment_size", 0, "Rows per sorted segment of the vmapped program (0: auto).")
_MAX_ITER = flags.DEFINE_integer(
    "max_iter", 0, "0: each configuration's sampled max_iter; else every configuration trains this many steps."
)


def clocks() -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process): on a shared machine CPU seconds are the fairer measure."""
    return time.perf_counter(), time.process_time()


def since(t: tuple[float, float]) -> tuple[float, float]:
    now = clocks()
    return now[0] - t[0], now[1] - t[1]


def compiled(fn, *args):
    """(the compiled program, compile seconds, temporary memory MiB from XLA's memory analysis)."""
    t0 = time.perf_counter()
    exe = jax.jit(fn).lower(*args).compile()
    seconds = time.perf_counter() - t0
    analysis = exe.memory_analysis()
    return exe, seconds, getattr(analysis, "temp_size_in_bytes", float("nan")) / 2**20


def timed(exe, *args, reps: int) -> tuple[float, float]:
    """Fastest (wall, CPU) seconds of ``reps`` calls after one warm-up call (the least disturbed by other
    processes, as ``timeit`` reports)."""
    jax.block_until_ready(exe(*args))
    runs = []
    for _ in range(reps):
        t = clocks()
        jax.block_until_ready(exe(*args))
        runs.append(since(t))
    return min(r[0] for r in runs), min(r[1] for r in runs)


def sklearn_seconds(objective, specs: list[dict]) -> tuple[float, float]:
    """(wall, CPU) seconds to train ``specs`` one after the other with scikit-learn's ``MLPRegressor``."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPRegressor

    x, y = np.asarray(objective.x_train), np.asarray(objective.y_train)
    t0 = clocks()
    for i, p in enumerate(specs):
        epochs = max(1, math.ceil(p["max_iter"] * p["batch_size"] / len(y)))
        model = MLPRegressor(
            hidden_layer_sizes=(p["hidden_layer_size"],), activation=p["activation"], solver=p["solver"],
            learning_rate_init=p["learning_rate_init"], momentum=p.get("momentum", 0.9),
            beta_1=p.get("beta_1", 0.9), alpha=p["alpha"], batch_size=p["batch_size"], max_iter=epochs,
            tol=0.0, n_iter_no_change=epochs + 1, random_state=i,
        )  # fmt: skip
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            warnings.simplefilter("ignore", RuntimeWarning)  # divergent configurations overflow
            model.fit(x, y)
    return since(t0)


def main(argv):
    del argv
    from spaces.benchmarks.registry import make_benchmark

    objective = make_benchmark(f"mlp/{_DATASET.value}").replace(segment_size=_SEGMENT.value)
    space = objective.space
    key = jax.random.PRNGKey(_SEED.value)
    tokens = jax.jit(jax.vmap(space.sample))(jax.random.split(key, _BATCH.value))
    if _MAX_ITER.value:  # equal work per configuration: the vmapped loop runs no masked steps
        tokens = tokens.at[:, space.index("max_iter")].set(space.value_index("max_iter", _MAX_ITER.value))
    specs = [space.to_spec(t) for t in np.asarray(tokens)]
    steps = np.asarray([p["max_iter"] for p in specs])
    print(f"mlp/{_DATASET.value}: {len(objective.y_train)} fit rows, B = {_BATCH.value} configurations, "
          f"max_iter mean {steps.mean():.0f} max {steps.max()}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    b = _BATCH.value

    def line(name, n, wall, cpu, extra=""):
        print(f"{name:14s} {n / wall:8.1f} trainings/s wall, {n / cpu:8.1f} per CPU-second{extra}")
        return n / wall, n / cpu

    exe, comp, mem = compiled(objective.query, key, tokens)
    wall, cpu = timed(exe, key, tokens, reps=_REPS.value)
    vm = line("vmapped", b, wall, cpu, f" ({wall:.2f} s per batch; compile {comp:.1f} s; temp memory {mem:.1f} MiB)")

    exe1, comp1, mem1 = compiled(objective.query, key, tokens[:1])
    passes = []
    for _ in range(max(1, min(_REPS.value, 2))):  # the fastest of (up to) two passes over the B configurations
        t = clocks()
        for i in range(b):
            jax.block_until_ready(exe1(key, tokens[i : i + 1]))
        passes.append(since(t))
    wall, cpu = min(p[0] for p in passes), min(p[1] for p in passes)
    one = line("one at a time", b, wall, cpu, f" ({wall:.2f} s for {b}; compile {comp1:.1f} s; temp {mem1:.1f} MiB)")
    print(f"speedup vmapped / one at a time: {vm[0] / one[0]:.1f}x wall, {vm[1] / one[1]:.1f}x CPU")

    if _SKLEARN.value:
        n = min(_SKLEARN.value, b)
        wall, cpu = sklearn_seconds(objective, specs[:n])
        sk = line("scikit-learn", n, wall, cpu, f" ({wall:.2f} s for the first {n})")
        print(f"speedup vmapped / scikit-learn: {vm[0] / sk[0]:.1f}x wall, {vm[1] / sk[1]:.1f}x CPU")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory of this process: {peak:.0f} MiB")


if __name__ == "__main__":
    cli.run(main)
