"""nas.core.threefry_cpu: the unrolled CPU lowering of JAX's Threefry-2x32 gives the same bits; importing the
library installs nothing, and the engine installs it before it compiles a run, with the same numbers."""

import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nas.core import threefry_cpu
from nas.core.threefry_cpu import threefry2x32

threefry_cpu.install()  # the tests below compare the installed lowering with JAX's own numbers


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


# a fresh process: the library imported, then one run traced before and one after the engine installs it
ENGINE_INSTALLS = textwrap.dedent("""
    import jax, jax.numpy as jnp, numpy as np
    import nas, nas.core, nas.searchers, nas.engine.compile_policy, nas.engine.program_cache
    import nas.engine.runner as runner
    from nas.core import threefry_cpu
    from spaces.benchmarks.registry import make_benchmark

    def loops():
        return "while" in jax.jit(lambda k: jax.random.bits(k, (4,), jnp.uint32)).lower(jax.random.PRNGKey(0)).as_text()

    assert not threefry_cpu._installed[0] and loops(), "importing the library installed the lowering"
    bench = make_benchmark("nb201/cifar10")
    s = nas.searchers.make_searcher("regularized_evolution", bench.space, max_queries=12, batch_size=2)
    keys = jax.random.split(jax.random.PRNGKey(3), 2)

    def by_hand(key, objective):  # make_search's run, written out: traced with JAX's own lowering
        state = runner.init_state(s, key)
        state, _ = runner.run_steps(s, objective, key, state, s.num_steps)
        return state.history.first(s.max_queries)

    before = jax.jit(jax.vmap(by_hand, in_axes=(0, None)))(keys, bench)
    assert not threefry_cpu._installed[0] and loops()
    after = jax.jit(jax.vmap(runner.make_search(s), in_axes=(0, None)))(keys, bench)
    assert threefry_cpu._installed[0] and not loops(), "make_search did not install the lowering"
    for x, y in zip(jax.tree.leaves(before), jax.tree.leaves(after), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    print("ok")
""")


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="the unrolled lowering is installed for the CPU only")
def test_importing_installs_nothing_and_the_engine_installs_it_with_the_same_numbers():
    done = subprocess.run([sys.executable, "-c", ENGINE_INSTALLS], capture_output=True, text=True, env=dict(os.environ))
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]
