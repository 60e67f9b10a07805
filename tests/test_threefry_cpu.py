"""nas.core.threefry_cpu: the unrolled CPU lowering of JAX's Threefry-2x32 gives the same bits."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import nas.core  # noqa: F401  (installs the lowering)
from nas.core.threefry_cpu import threefry2x32


def test_known_answers_of_the_paper():
    # Random123's known-answer vectors for Threefry-2x32-20 (key, counter -> output)
    cases = [
        ((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
        ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
        ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0)),
    ]
    for key, ctr, want in cases:
        got = jax.jit(threefry2x32)(*(np.uint32(v) for v in (*key, *ctr)))
        assert [int(g) for g in got] == list(want)


def test_jax_random_unchanged():
    # values computed by JAX's own (rolled) CPU lowering, in a process that never installed this one
    k = jax.random.PRNGKey(42)
    assert jax.random.split(k, 2).ravel().tolist() == [1832780943, 270669613, 64467757, 2916123636]
    keys = jax.random.split(jax.random.PRNGKey(7), 2)
    bits = jax.jit(jax.vmap(lambda k: jax.random.bits(k, (2, 3), jnp.uint32)))(keys)
    assert bits.ravel().tolist() == [3725328165, 2389352394, 1291398195, 1428036129, 4260943734, 883424441,
                                     2899676959, 3548400998, 1692160380, 1822441453, 900059358, 2247291750]  # fmt: skip
    assert jax.jit(lambda k: jax.random.fold_in(k, 5))(k).tolist() == [2765691542, 824333390]
    u = jax.jit(lambda k: jax.random.uniform(k, (3,)))(k)
    assert u.tolist() == [0.48870956897735596, 0.6797971725463867, 0.6162714958190918]


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="the unrolled lowering is installed for the CPU only")
def test_the_cpu_lowering_has_no_loop():
    k = jax.random.PRNGKey(42)
    keys = jax.random.split(jax.random.PRNGKey(7), 2)
    assert "while" not in jax.jit(lambda k: jax.random.bits(k, (4,), jnp.uint32)).lower(k).as_text()
    vmapped = jax.jit(jax.vmap(lambda k: jax.random.bits(k, (3, 4), jnp.uint32))).lower(keys).as_text()
    assert "while" not in vmapped and "tensor<24xui32>" in vmapped  # the hash runs on the flat 2 x 3 x 4 words
