"""JAX's Threefry-2x32 hash lowered with its 20 rounds unrolled on the CPU (the same bits, compiled faster).

Every ``jax.random`` call (``split``, ``fold_in``, ``bits``, ``uniform``, ...) evaluates the Threefry-2x32
block cipher (Salmon, Moraes, Dror & Shaw 2011, "Parallel Random Numbers: As Easy as 1, 2, 3", SC'11,
Threefry-2x32 with 20 rounds: rotations ``R = (13, 15, 26, 6, 17, 29, 16, 24)``, a key injection every 4
rounds with the parity word ``0x1BD11BDA``). On the CPU JAX lowers it as a rolled loop of 5 iterations
whose rotation amounts are loop-carried values; LLVM then compiles every such loop (one per random call,
per shape) into a large kernel: 75 % of the LLVM IR of a BANANAS step program came from them, and a
``vmap``-ped ``jax.random.bits`` of shape ``(9, 20, 20)`` took 1.05 s of XLA time rolled against 0.05 s
unrolled (docs/dev/engine.md, "The Threefry lowering on the CPU"). Other platforms already get the unrolled form. The
operands are also flattened to one dimension first: under ``vmap`` a draw's shape is ``[seeds, candidates,
tokens, values]``, and LLVM unrolls and vectorizes such small inner dimensions once per draw (GP-BO's
programs, 20 seeds: 54.3 s of compile unrolled, 41.7 s unrolled and flat; BANANAS 19.6 and 17.5 s).

``install()`` registers the flat, unrolled lowering for the CPU platform (idempotent). Importing the library
installs nothing: the engine calls it before it traces a searcher's program
(``nas.engine.compile_policy.prepare_compile``: from ``make_search``, ``make_mf_search``, the program cache
and the compile options). The hash is integer arithmetic that wraps exactly, so the bits, and every number
derived from them, are the same as with JAX's own CPU lowering (``tests/test_threefry_cpu.py`` checks the
paper's known answers and JAX's outputs bit for bit). From then on it changes how programs traced in the
process are lowered, also a user's own JAX programs, never their results.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax import lax

ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
PARITY = 0x1BD11BDA
_installed = [False]


def _rotate_left(x: jnp.ndarray, r: int) -> jnp.ndarray:
    return lax.shift_left(x, np.uint32(r)) | lax.shift_right_logical(x, np.uint32(32 - r))


def threefry2x32(k1, k2, x1, x2):
    """Threefry-2x32-20 of the counter words ``(x1, x2)`` under the key ``(k1, k2)`` (uint32 arrays that
    broadcast together): the two output words, each of the broadcast shape."""
    k1, k2, x1, x2 = jnp.broadcast_arrays(*(jnp.asarray(a, jnp.uint32) for a in (k1, k2, x1, x2)))
    ks = (k1, k2, k1 ^ k2 ^ np.uint32(PARITY))
    a, b = x1 + ks[0], x2 + ks[1]
    for s in range(1, 6):  # 5 x 4 rounds, each group followed by a key injection
        for r in ROTATIONS[(s - 1) % 2]:
            a = a + b
            b = _rotate_left(b, r) ^ a
        a = a + ks[s % 3]
        b = b + ks[(s + 1) % 3] + np.uint32(s)
    return a, b


def install() -> None:
    """Lowers ``threefry2x32_p`` on the CPU with the unrolled rounds (for programs traced from now on)."""
    if _installed[0]:
        return
    try:
        from jax.extend.random import threefry2x32_p
        from jax.interpreters import mlir
    except ImportError:  # a JAX without these names: its own lowering (the same numbers, compiled slower)
        return

    def lowering(*args):
        shape = jnp.broadcast_shapes(*(a.shape for a in args))
        flat = [jnp.broadcast_to(a, shape).reshape(-1) for a in args]
        return [y.reshape(shape) for y in threefry2x32(*flat)]

    mlir.register_lowering(threefry2x32_p, mlir.lower_fun(lowering, multiple_results=True), platform="cpu")
    _installed[0] = True
