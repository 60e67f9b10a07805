"""Speed of the GP's linear algebra: plain-JAX ``surrogates.linalg`` against jaxlib's LAPACK calls.

    python -m scripts.bench.bench_linalg                          # 100 matrices of n = 64, 128, 150
    python -m scripts.bench.bench_linalg --sizes=150 --batch=100 --calls=20

Times the operation the GP fit repeats ``gp_steps`` times per BO step: the negative log marginal
likelihood of ``batch`` Gram matrices (Hamming kernel on random binary encodings, one per seed)
and its gradient, ``jit(vmap(value_and_grad))``, on one CPU device. ``jax``: ``surrogates.linalg
.gaussian_nll`` (blocked Cholesky and ``L^-1`` in matmuls, gradient R&W eq. 5.9); ``lapack``: the
former ``surrogates.gp`` code (``jnp.linalg.cholesky`` + ``cho_solve``, gradient by autodiff),
which lowers to jaxlib's batched LAPACK custom calls (``potrf``/``trsm``; these deadlocked under
``vmap`` with the seeds split over devices, so this script keeps one device). Prints per size and
path: compile seconds, wall and process CPU seconds per call (median of ``--calls``, after one
warm-up call), the machine's load average (the CPU may be shared: quote it with the figures),
and the largest difference of the two paths' values.
"""

from __future__ import annotations

import json
import os
import time

from absl import flags

from nas.experiment import cli

_SIZES = flags.DEFINE_list("sizes", ["64", "128", "150"], "Gram matrix sizes n (the GP's padded data rows)")
_BATCH = flags.DEFINE_integer("batch", 100, "matrices per call (seeds), vmapped")
_CALLS = flags.DEFINE_integer("calls", 10, "timed calls per size and path")
_PATHS = flags.DEFINE_list("paths", ["jax", "lapack"], "jax (surrogates.linalg) and/or lapack (jnp.linalg)")


def _lapack_nll(k, y, mask):
    """The GP likelihood as ``surrogates.gp`` computed it with LAPACK (R&W eq. 2.30)."""
    import jax
    import jax.numpy as jnp

    from surrogates.linalg import masked_gram

    y = jnp.where(mask, y, 0.0)
    chol = jnp.linalg.cholesky(masked_gram(k, mask))
    alpha = jax.scipy.linalg.cho_solve((chol, True), y)
    return 0.5 * y @ alpha + jnp.sum(jnp.log(jnp.diag(chol))) + 0.5 * jnp.sum(mask) * jnp.log(2.0 * jnp.pi)


def main(argv):
    del argv
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax
    import jax.numpy as jnp
    import numpy as np

    from surrogates.linalg import gaussian_nll

    fns = {"jax": gaussian_nll, "lapack": _lapack_nll}
    print(f"jax {jax.__version__}, devices {jax.devices()[:1]}, batch {_BATCH.value}", flush=True)
    for n in (int(s) for s in _SIZES.value):
        rng = np.random.default_rng(n)
        bits = rng.integers(0, 2, (_BATCH.value, n, 30)).astype(np.float32)
        dist = bits @ (1 - bits).transpose(0, 2, 1) + (1 - bits) @ bits.transpose(0, 2, 1)  # Hamming
        k = jnp.asarray(np.exp(-dist / 8.0) + 1e-3 * np.eye(n), jnp.float32)
        y = jnp.asarray(rng.normal(size=(_BATCH.value, n)), jnp.float32)
        mask = jnp.asarray(np.arange(n)[None] < rng.integers(n // 2, n + 1, (_BATCH.value, 1)))
        values = {}
        for path in _PATHS.value:
            fn = jax.jit(jax.vmap(jax.value_and_grad(fns[path], argnums=(0, 1))))
            t0 = time.perf_counter()
            compiled = fn.lower(k, y, mask).compile()
            compile_s = time.perf_counter() - t0
            jax.block_until_ready(compiled(k, y, mask))
            walls, cpus = [], []
            for _ in range(_CALLS.value):
                t0, c0 = time.perf_counter(), time.process_time()
                out = jax.block_until_ready(compiled(k, y, mask))
                walls.append(time.perf_counter() - t0)
                cpus.append(time.process_time() - c0)
            values[path] = np.asarray(out[0], np.float64)
            row = {
                "n": n,
                "path": path,
                "compile_s": round(compile_s, 2),
                "wall_ms": round(1e3 * float(np.median(walls)), 1),
                "cpu_ms": round(1e3 * float(np.median(cpus)), 1),
                "load": round(os.getloadavg()[0], 1),
            }
            print("RESULT " + json.dumps(row), flush=True)
        if len(values) == 2:
            diff = np.max(np.abs(values["jax"] - values["lapack"]) / np.maximum(np.abs(values["lapack"]), 1.0))
            print(f"n={n}: largest relative difference of the NLL values, jax vs lapack: {diff:.2e}", flush=True)
    return 0


if __name__ == "__main__":
    cli.run(main)
