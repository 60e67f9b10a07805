"""How fast can one MLP training step be on this machine? The arithmetic bound behind ``bench_training``.

    python -m scripts.bench.bench_mlp_step [--widths=8,32,128] [--batches=64,256] [--rows=64] [--features=10] \
        [--steps=200]

A bare one-hidden-layer tanh MLP (no masks, no optimizer state, SGD), ``--steps`` steps on ``--rows`` rows
drawn per step from random data of the diabetes shape (442 x ``--features``), trained three ways:

- alone: one configuration, ``jax.jit`` of a ``lax.scan`` over the steps;
- vmapped: B configurations, ``jax.vmap`` of the same (each its own row draws; batched matmuls);
- shared rows: B configurations that see the same rows, so the first layer is ONE matrix product
  ``[rows, F] x [F, B * width]`` (the most a batch can share; the library's objective does not do this,
  since a configuration's row draws would then depend on its batch).

Prints CPU microseconds of this process per configuration and step (fastest of 3 timed calls after a
warm-up; CPU time because it is steadier than wall time on a shared machine) and the arithmetic rate of
the alone run (``4 rows F width + 6 rows width`` flops per step: two products forward, two backward, the
output layer). Where the alone run already computes at a rate near the machine's, no batching can make
a configuration 10x cheaper.
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp
from absl import flags

from nas.experiment import cli

_WIDTHS = flags.DEFINE_list("widths", ["8", "32", "128"], "Hidden widths.")
_BATCHES = flags.DEFINE_list("batches", ["64", "256"], "Configurations per vmapped / shared batch (B).")
_ROWS = flags.DEFINE_integer("rows", 64, "Rows per step (the space's largest batch_size).")
_FEATURES = flags.DEFINE_integer("features", 10, "Input features (diabetes: 10).")
_STEPS = flags.DEFINE_integer("steps", 200, "Training steps.")


def make_steps(data_x, data_y, rows: int, steps: int):
    n, f = data_x.shape

    def loss(p, x, y):
        z = jnp.einsum("rf,...fw->r...w", x, p["w1"]) + p["b1"]
        out = jnp.einsum("r...w,...w->r...", jnp.tanh(z), p["w2"]) + p["b2"]
        return 0.5 * jnp.sum(jnp.mean(jnp.square(out - y.reshape((rows,) + (1,) * (out.ndim - 1))), axis=0))

    def train(p, key):
        def step(p, k):
            idx = jax.random.randint(k, (rows,), 0, n)
            g = jax.grad(loss)(p, data_x[idx], data_y[idx])
            return jax.tree.map(lambda a, b: a - 1e-2 * b, p, g), None

        return jax.lax.scan(step, p, jax.random.split(key, steps))[0]

    return train


def init(key, batch: tuple[int, ...], features: int, width: int) -> dict:
    k1, k2 = jax.random.split(key)
    return {
        "w1": 0.3 * jax.random.normal(k1, batch + (features, width)),
        "b1": jnp.zeros(batch + (width,)),
        "w2": 0.3 * jax.random.normal(k2, batch + (width,)),
        "b2": jnp.zeros(batch),
    }


def cpu_seconds(fn, *args) -> float:
    fn = jax.jit(fn)
    jax.block_until_ready(fn(*args))
    best = float("inf")
    for _ in range(3):
        t = time.process_time()
        jax.block_until_ready(fn(*args))
        best = min(best, time.process_time() - t)
    return best


def gemm_rate(n: int = 2048) -> float:
    """GFLOP/s of one large float32 matrix product: the practical peak of this machine."""
    a = jax.random.normal(jax.random.PRNGKey(1), (n, n))
    jax.block_until_ready(jnp.dot(a, a))
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        jax.block_until_ready(jnp.dot(a, a))
        best = min(best, time.perf_counter() - t)
    return 2 * n**3 / best / 1e9


def main(argv):
    del argv
    print(f"a 2048 x 2048 float32 matrix product runs at {gemm_rate():.0f} GFLOP/s (wall) on this machine")
    rows, f, steps = _ROWS.value, _FEATURES.value, _STEPS.value
    kx, ky, kp, kt = jax.random.split(jax.random.PRNGKey(0), 4)
    train = make_steps(jax.random.normal(kx, (442, f)), jax.random.normal(ky, (442,)), rows, steps)
    print(f"CPU us per configuration and step ({rows} rows, {f} features, {steps} steps); GFLOP/s of the alone run")
    print("| width | B | alone | vmapped | shared rows (one GEMM) | alone GFLOP/s |\n|---|---|---|---|---|---|")
    for width in (int(w) for w in _WIDTHS.value):
        alone = cpu_seconds(train, init(kp, (), f, width), kt) / steps
        flops = rows * width * (4 * f + 6)
        for b in (int(x) for x in _BATCHES.value):
            params = init(kp, (b,), f, width)
            vm = cpu_seconds(jax.vmap(train), params, jax.random.split(kt, b)) / steps / b
            shared = cpu_seconds(train, params, kt) / steps / b
            cells = [alone * 1e6, vm * 1e6, shared * 1e6, flops / alone / 1e9]
            print(f"| {width} | {b} | " + " | ".join(f"{c:.1f}" for c in cells) + " |")


if __name__ == "__main__":
    cli.run(main)
