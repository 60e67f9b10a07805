"""Searchers' compiler hooks (``nas.core.searcher``): the options they set, what XLA_FLAGS overrides, and
that XLA's older CPU emitters (``cpu_fusion_emitters = False``) leave the searchers' histories unchanged."""

import jax
import numpy as np
import pytest

from nas.core import searcher as searcher_module
from nas.core.searcher import make_searcher
from nas.core.xla_options import compile_option_known
from nas.engine.multi_fidelity_runner import make_mf_search
from nas.engine.runner import init_state, make_search, run_steps
from spaces.benchmarks.registry import make_benchmark
from tests.mf_tables import BUDGETS, SPACE, toy_table

LOOP_EMITTERS = ("random_search", "regularized_evolution", "local_search")
MF_LOOP_EMITTERS = ("hyperband", "asha")  # successive halving shares Hyperband's BracketSearcher
# the CPU's emitter choice: other backends ignore it, and XLA retired it after jaxlib 0.10
HAS_EMITTER_OPTION = jax.default_backend() == "cpu" and compile_option_known("xla_cpu_use_fusion_emitters", False)


def assert_same_histories(a, b) -> None:
    """Every array of two runs' outputs equal, bit for bit."""
    for x, y in zip(jax.tree.leaves(jax.device_get(a)), jax.tree.leaves(jax.device_get(b)), strict=True):
        np.testing.assert_array_equal(x, y)


@pytest.fixture(scope="module")
def bench():
    return make_benchmark("nb201/cifar10")


def test_options_and_xla_flags(bench, monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "")
    s = make_searcher("regularized_evolution", bench.space, max_queries=20)
    want = {"xla_backend_optimization_level": 1}
    if HAS_EMITTER_OPTION:
        want["xla_cpu_use_fusion_emitters"] = False
    assert s.compiler_options() == want
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=true --xla_backend_optimization_level=2")
    assert s.compiler_options() is None  # the user's flags win
    assert make_searcher("remaade", bench.space, max_queries=20).compiler_options() is None


def test_an_option_this_xla_does_not_know_is_left_out(bench, monkeypatch):
    assert not compile_option_known("xla_no_such_option_anywhere", False)
    monkeypatch.setenv("XLA_FLAGS", "")
    monkeypatch.setattr(searcher_module, "compile_option_known", lambda name, value: False)
    s = make_searcher("random_search", bench.space, max_queries=20)
    assert s.compiler_options() == {"xla_backend_optimization_level": 1}


@pytest.mark.skipif(not HAS_EMITTER_OPTION, reason="XLA's CPU emitter option: CPU only, retired after jaxlib 0.10")
@pytest.mark.parametrize("name", LOOP_EMITTERS)
def test_loop_emitters_give_the_same_history(bench, name):
    s = make_searcher(name, bench.space, max_queries=24)
    keys = jax.random.split(jax.random.PRNGKey(3), 3)
    run = jax.vmap(make_search(s), in_axes=(0, None))
    options = [{"xla_cpu_use_fusion_emitters": on, "xla_backend_optimization_level": 1} for on in (True, False)]
    compiled = [jax.jit(run, compiler_options=o).lower(keys, bench).compile() for o in options]
    assert compiled[0].as_text() != compiled[1].as_text()  # the option reached XLA: other kernels
    assert_same_histories(*(c(keys, bench) for c in compiled))


@pytest.mark.slow
@pytest.mark.skipif(not HAS_EMITTER_OPTION, reason="XLA's CPU emitter option: CPU only, retired after jaxlib 0.10")
@pytest.mark.parametrize("name", MF_LOOP_EMITTERS)
def test_schedulers_hooks_give_the_same_history(name):
    """The bracket schedulers' hooks (level 1, loop emitters) against XLA's defaults (level 3, fusion emitters)."""
    s = make_searcher(name, SPACE, fidelities=BUDGETS, max_queries=6)
    assert (s.xla_optimization_level, s.cpu_fusion_emitters) == (1, False)
    table, keys = toy_table(BUDGETS, continues=True), jax.random.split(jax.random.PRNGKey(4), 2)
    run = jax.vmap(make_mf_search(s), in_axes=(0, None))
    options = ({"xla_cpu_use_fusion_emitters": True, "xla_backend_optimization_level": 3},
               {"xla_cpu_use_fusion_emitters": False, "xla_backend_optimization_level": 1})  # fmt: skip
    assert_same_histories(*(jax.jit(run, compiler_options=o)(keys, table) for o in options))


@pytest.mark.skipif(not HAS_EMITTER_OPTION, reason="XLA's CPU emitter option: CPU only, retired after jaxlib 0.10")
def test_bo_random_first_steps_compile_light_with_the_same_state(bench, monkeypatch):
    """BANANAS' and GP-BO's random first steps (``program_for``'s variant 0) take the light hooks (level 1,
    loop emitters) and leave the run state as XLA's defaults do; their model steps, NASBOT's and ParEGO's
    random steps (float arithmetic) keep XLA's defaults."""
    monkeypatch.setenv("XLA_FLAGS", "")
    light = {"xla_backend_optimization_level": 1, "xla_cpu_use_fusion_emitters": False}
    keys = jax.random.split(jax.random.PRNGKey(5), 3)
    for name, options in (("bananas", {"num_members": 2}), ("gp_bo", {})):
        s = make_searcher(name, bench.space, max_queries=24, batch_size=2, num_init=6, **options)
        random_steps = s.program_for(0, 3)
        assert random_steps.variant == 0 and random_steps.compiler_options() == light
        assert s.program_for(3, 4).compiler_options() is None and s.compiler_options() is None
        state = jax.vmap(lambda k, s=s: init_state(s, k))(keys)
        run = jax.vmap(lambda k, st, v=random_steps: run_steps(v, bench, k, st, 3), in_axes=(0, 0))
        default = {"xla_backend_optimization_level": 3, "xla_cpu_use_fusion_emitters": True}  # XLA's own
        compiled = [jax.jit(run, compiler_options=o).lower(keys, state).compile() for o in (default, light)]
        assert compiled[0].as_text() != compiled[1].as_text()  # the options reached XLA
        assert_same_histories(*(c(keys, state) for c in compiled))
    for name in ("nasbot", "parego_bananas"):  # their own options (NASBOT: level 1) for every program
        s = make_searcher(name, bench.space, max_queries=24)
        assert s.with_variant(0).compiler_options() == s.compiler_options() != light, name


def test_init_options(bench, monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "")
    loop = {"xla_cpu_use_fusion_emitters": False} if HAS_EMITTER_OPTION else {}
    remaade = make_searcher("remaade", bench.space, max_queries=20)
    assert remaade.init_compiler_options() == (loop or None)  # XLA's default level, the loop emitters
    evolution = make_searcher("regularized_evolution", bench.space, max_queries=20)
    assert evolution.init_compiler_options() == {"xla_backend_optimization_level": 0, **loop}
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=true")
    assert remaade.init_compiler_options() is None  # the user's flag wins


# searchers whose init compiles at XLA's default level and draws floats: policy networks, a meta-DNN, MLP
# ensembles, GPs (ReACTS' init, 13 s to compile with the fusion emitters, and TNAS', 7 s for both compiles,
# are compared by scripts.bench.bench_compile's history digests instead)
FLOAT_INITS = ("alphax", "bananas", "gp_bo", "mcts", "nasbot", "remaade", "smbo_linear")


@pytest.mark.slow
@pytest.mark.skipif(not HAS_EMITTER_OPTION, reason="XLA's CPU emitter option: CPU only, retired after jaxlib 0.10")
def test_init_states_are_the_same_with_the_loop_emitters(bench):
    from nas.engine.runner import init_state

    keys = jax.random.split(jax.random.PRNGKey(5), 3)
    for name in FLOAT_INITS:
        s = make_searcher(name, bench.space, max_queries=20)
        init = jax.vmap(lambda k, s=s: init_state(s, k))
        options = [{"xla_cpu_use_fusion_emitters": on, "xla_backend_optimization_level": 3} for on in (True, False)]
        assert_same_histories(*(jax.jit(init, compiler_options=o)(keys) for o in options))
