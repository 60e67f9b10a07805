"""The engine's compile policy (``nas.engine.compile_policy``): the options a searcher's ``compile_profile``
sets, what XLA_FLAGS overrides, and that XLA's older CPU emitters (the ``"integer_steps"`` profile) leave the
searchers' histories unchanged."""

import jax
import numpy as np
import pytest

from nas.engine import compile_policy
from nas.engine.compile_policy import compile_option_known, compiler_options, init_compiler_options
from nas.engine.multi_fidelity_runner import make_mf_search
from nas.engine.runner import init_state, make_search, run_steps
from nas.searchers import make_searcher
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
    assert compiler_options(s) == want
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=true --xla_backend_optimization_level=2")
    assert compiler_options(s) is None  # the user's flags win
    assert compiler_options(make_searcher("remaade", bench.space, max_queries=20)) is None


def test_an_option_this_xla_does_not_know_is_left_out(bench, monkeypatch):
    assert not compile_option_known("xla_no_such_option_anywhere", False)
    monkeypatch.setenv("XLA_FLAGS", "")
    monkeypatch.setattr(compile_policy, "compile_option_known", lambda name, value: False)
    s = make_searcher("random_search", bench.space, max_queries=20)
    assert compiler_options(s) == {"xla_backend_optimization_level": 1}


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
    assert s.compile_profile == "integer_steps" and compile_policy.profile_settings(s) == (1, False)
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
        assert random_steps.variant == 0 and compiler_options(random_steps) == light
        assert compiler_options(s.program_for(3, 4)) is None and compiler_options(s) is None
        state = jax.vmap(lambda k, s=s: init_state(s, k))(keys)
        run = jax.vmap(lambda k, st, v=random_steps: run_steps(v, bench, k, st, 3), in_axes=(0, 0))
        default = {"xla_backend_optimization_level": 3, "xla_cpu_use_fusion_emitters": True}  # XLA's own
        compiled = [jax.jit(run, compiler_options=o).lower(keys, state).compile() for o in (default, light)]
        assert compiled[0].as_text() != compiled[1].as_text()  # the options reached XLA
        assert_same_histories(*(c(keys, state) for c in compiled))
    for name in ("nasbot", "parego_bananas"):  # their own options (NASBOT: level 1) for every program
        s = make_searcher(name, bench.space, max_queries=24)
        assert compiler_options(s.with_variant(0)) == compiler_options(s) != light, name


def test_init_options(bench, monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "")
    loop = {"xla_cpu_use_fusion_emitters": False} if HAS_EMITTER_OPTION else {}
    remaade = make_searcher("remaade", bench.space, max_queries=20)
    assert init_compiler_options(remaade) == (loop or None)  # XLA's default level, the loop emitters
    evolution = make_searcher("regularized_evolution", bench.space, max_queries=20)
    assert init_compiler_options(evolution) == {"xla_backend_optimization_level": 0, **loop}
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_use_fusion_emitters=true")
    assert init_compiler_options(remaade) is None  # the user's flag wins


def test_study_options(bench, monkeypatch):
    """A Study's one-step programs: level 0 for a light profile, and on a CPU no loop-invariant code motion for
    ``"integer_steps"`` (its hoisted kernels went to XLA's thread pool); passes the user skips win."""
    from nas.engine.compile_policy import study_compiler_options

    monkeypatch.setenv("XLA_FLAGS", "")
    loop = {"xla_cpu_use_fusion_emitters": False} if HAS_EMITTER_OPTION else {}
    cpu = jax.default_backend() == "cpu"
    evolution = make_searcher("regularized_evolution", bench.space, max_queries=20)
    steps, init = study_compiler_options(evolution)
    hoisting = {"xla_disable_hlo_passes": "while-loop-invariant-code-motion"} if cpu else {}
    assert steps == {"xla_backend_optimization_level": 0, **loop, **hoisting}
    assert init == {"xla_backend_optimization_level": 0, **loop}  # init runs once: XLA's passes as they are
    tpe = make_searcher("tpe", bench.space, max_queries=20)
    assert "xla_disable_hlo_passes" not in study_compiler_options(tpe)[0]  # its loops' invariants are work
    monkeypatch.setenv("XLA_FLAGS", "--xla_disable_hlo_passes=algsimp")
    assert "xla_disable_hlo_passes" not in study_compiler_options(evolution)[0]


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="the option is for XLA's CPU runtime")
def test_study_ask_without_loop_hoisting_proposes_the_same(bench):
    """The evolution ``ask`` of a Study, compiled with and without the pass: the same tokens and state."""
    from nas.engine.compile_policy import study_compiler_options
    from nas.host.programs import study_programs

    s = make_searcher("regularized_evolution", bench.space, max_queries=40, population_size=6, tournament_size=3)
    init, ask, tell = study_programs(s)
    key, state = jax.random.PRNGKey(3), init(jax.random.PRNGKey(3))
    for step in range(12):  # past the random phase: tournaments and mutations
        tokens, state, k_tell = ask(key, step, state)
        state, _ = tell(k_tell, tokens, jax.numpy.arange(tokens.shape[0], dtype=jax.numpy.float32) * step, state)
    steps = study_compiler_options(s)[0]
    hoisting = {k: v for k, v in steps.items() if k != "xla_disable_hlo_passes"}
    assert hoisting != steps
    compiled = [jax.jit(ask.__wrapped__, compiler_options=o).lower(key, 12, state).compile() for o in (steps, hoisting)]
    assert compiled[0].as_text().count("while(") == compiled[1].as_text().count("while(")
    assert len(compiled[0].as_text()) != len(compiled[1].as_text())  # the option reached XLA
    assert_same_histories(*(c(key, 12, state) for c in compiled))


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


# (XLA level, CPU fusion emitters) of every registered searcher's programs, as 0.2's two hooks set them
# (the BO loops: their generic program; their random first steps, variant 0, are checked above)
SETTINGS = {
    "compile_bound": ("bohb", "nasbot", "nsga2", "tpe", "tpe_hyperband"),
    "integer_steps": ("asha", "hyperband", "local_search", "mo_asha", "mo_regularized_evolution",
                      "parego_local_search", "random_search", "regularized_evolution", "successive_halving"),
}  # fmt: skip


def test_every_searcher_keeps_its_compile_settings():
    from nas.searchers import SEARCHERS, available_searchers

    for name in available_searchers(None):
        profile = next((p for p, names in SETTINGS.items() if name in names), "default")
        declared = SEARCHERS[name].compile_profile  # a property where a variant decides (the BO loops, warm start)
        assert isinstance(declared, property) or declared == profile, name
        assert compile_policy.PROFILES[profile] == {"default": (None, None), "compile_bound": (1, None),
                                                    "integer_steps": (1, False)}[profile]  # fmt: skip


def test_old_hooks_warn_and_still_decide(bench, monkeypatch):
    """0.2's ``Searcher.compiler_options()`` and a searcher class's ``xla_optimization_level`` keep working for
    a release, each with a DeprecationWarning naming the new way; a profile nobody knows is one clear error."""
    monkeypatch.setenv("XLA_FLAGS", "")
    s = make_searcher("regularized_evolution", bench.space, max_queries=20)
    with pytest.warns(DeprecationWarning, match="compile_policy.compiler_options"):
        assert s.compiler_options() == compiler_options(s)
    with pytest.warns(DeprecationWarning, match="compile_policy.init_compiler_options"):
        assert s.init_compiler_options() == init_compiler_options(s)
    remaade = make_searcher("remaade", bench.space, max_queries=20)
    monkeypatch.setattr(type(remaade), "xla_optimization_level", 2, raising=False)
    with pytest.warns(DeprecationWarning, match="set compile_profile"):
        assert compiler_options(remaade) == {"xla_backend_optimization_level": 2}
    monkeypatch.delattr(type(remaade), "xla_optimization_level")
    monkeypatch.setattr(type(remaade), "compile_profile", "fast", raising=False)
    with pytest.raises(ValueError, match="compile_profile is 'fast': use one of"):
        compiler_options(remaade)
