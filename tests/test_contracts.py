"""The space/objective/searcher contracts on NAS-Bench-201 and random search."""

import jax
import numpy as np
import pytest

from nas.engine.incumbent import incumbent_curve
from nas.engine.runner import make_search
from nas.searchers import make_searcher
from spaces import nb201
from spaces.benchmarks import nb201 as nb201_tables
from spaces.benchmarks.registry import make_benchmark


def test_nb201_arch_string_roundtrip():
    arch = "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|"
    tokens = nb201.parse_arch_string(arch)
    assert tokens.tolist() == [3, 3, 4, 1, 3, 1]
    assert nb201.SPACE.to_spec(tokens) == arch
    with pytest.raises(ValueError, match="not a NAS-Bench-201"):
        nb201.parse_arch_string("|conv~0|")


def test_nb201_query_matches_package_table():
    bench = make_benchmark("nb201/cifar10")
    raw = nb201_tables._package_table("cifar10")
    tokens = np.array([[int(c) for c in k] for k in list(raw)[:64]], np.int32)
    res = jax.jit(bench.query)(jax.random.PRNGKey(0), tokens)
    want = np.array([np.mean(raw[k]["val_acc"]) for k in list(raw)[:64]])
    np.testing.assert_allclose(np.asarray(res["valid"]), want, rtol=1e-5)
    rnd = bench.with_protocol("random").query(jax.random.PRNGKey(1), tokens)
    for row, k in zip(np.asarray(rnd["valid"]), list(raw)[:64]):
        assert np.isclose(raw[k]["val_acc"], row, rtol=1e-6).any()


def test_invalid_tokens_score_minus_inf():
    bench = make_benchmark("nb201/cifar10")
    res = bench.query(jax.random.PRNGKey(0), np.array([[0, 0, 0, 0, 0, 7]], np.int32))
    assert res["valid"][0] == -np.inf and res["test"][0] == -np.inf and res["cost"][0] == 0


def test_unknown_names_fail_clearly():
    with pytest.raises(ValueError, match="unknown benchmark"):
        make_benchmark("nb201/cifar11")
    with pytest.raises(ValueError, match="no option"):
        make_benchmark("nb201/cifar10", protcol="mean")
    with pytest.raises(ValueError, match="unknown searcher"):
        make_searcher("random_serch", nb201.SPACE)


def test_random_search_no_repeats_and_vmap_equals_single(nb201_test_csv):
    bench = make_benchmark("nb201/cifar10", test_csv=nb201_test_csv)
    s = make_searcher("random_search", bench.space, max_queries=60, batch_size=3)
    run = make_search(s)
    keys = jax.random.split(jax.random.PRNGKey(3), 4)
    many = jax.jit(jax.vmap(run, in_axes=(0, None)))(keys, bench)
    one = jax.jit(run)(keys[2], bench)
    np.testing.assert_array_equal(np.asarray(many.tokens[2]), np.asarray(one.tokens))
    ids = np.asarray(jax.vmap(jax.vmap(bench.space.string_id))(many.tokens))
    assert all(len(set(r)) == 60 for r in ids)
    _, test_inc = incumbent_curve(many.score, many.report_score)
    assert np.all(np.diff(np.asarray(incumbent_curve(many.score, many.report_score)[0]), axis=-1) >= 0)
    assert np.all(np.isfinite(np.asarray(test_inc)))


def test_the_registry_module_imports_no_searcher():
    """``nas.core.registry`` is filled by the searcher modules (no cycle); ``nas.searchers`` reads it full."""
    import ast
    import pathlib

    import nas.core.registry as registry
    import nas.searchers

    for module in ("contract", "options", "registry"):
        tree = ast.parse(pathlib.Path(registry.__file__).with_name(f"{module}.py").read_text())
        imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        assert not [m for m in imported if m.startswith("nas.searchers")], module
    # nas.searchers reads the whole registry: a built-in is found before its module was imported
    assert {"random_search", "asha", "bananas"} <= set(nas.searchers.available_searchers(None))
    assert nas.searchers.searcher_class("bananas").registry_name == "bananas"


def test_old_paths_of_the_contract_and_its_helpers_warn_and_work():
    """0.2's nas.core.searcher and nas.searchers.mf_observations (split), the moved nas.searchers.brackets and
    candidates, and program_cache.compiled (renamed cached_jit) still import, each with a DeprecationWarning
    that names where the names live now."""
    import importlib
    import sys

    from nas.core import contract, ladders, options, registry, unseen_draw, vmap_ops
    from nas.engine import program_cache
    from nas.searchers import acquisition_candidates, observations

    for old in ("nas.core.searcher", "nas.searchers.mf_observations"):
        sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match="nas.core.contract"):
        old_searcher = importlib.import_module("nas.core.searcher")
    assert old_searcher.Searcher is contract.Searcher and old_searcher.OptionError is options.OptionError
    assert old_searcher.register is registry.register and "random_search" in old_searcher.available_searchers()
    with pytest.warns(DeprecationWarning, match="nas.searchers.observations"):
        old_mf = importlib.import_module("nas.searchers.mf_observations")
    assert (old_mf.draw_new, old_mf.observe, old_mf.run_if) == (unseen_draw.draw_new, observations.observe,
                                                                 vmap_ops.run_if)  # fmt: skip
    for old, new, name in (("nas.searchers.brackets", ladders, "asha_bounds"),
                           ("nas.searchers.candidates", acquisition_candidates, "first_in_order")):  # fmt: skip
        sys.modules.pop(old, None)
        with pytest.warns(DeprecationWarning, match=new.__name__):
            assert getattr(importlib.import_module(old), name) is getattr(new, name)
    with pytest.warns(DeprecationWarning, match="renamed cached_jit"):
        assert program_cache.compiled is program_cache.cached_jit


def test_the_base_keeps_the_never_requery_set_and_the_told_count():
    """A searcher that writes only ``_tell`` gets its told ids in ``state.seen`` and their number in
    ``state.num_told`` from ``Searcher.tell``; a state without those fields (or ``seen=None``) is left alone."""
    import jax.numpy as jnp
    from flax import struct

    from nas.core.contract import Searcher
    from nas.core.seen_set import Seen, seen_contains, seen_init

    @struct.dataclass
    class State:
        seen: Seen | None
        num_told: jax.Array
        best: jax.Array

    class Best(Searcher):
        registry_name = "best_only"

        def _tell(self, key, tokens, scores, state):
            return state.replace(best=jnp.maximum(state.best, jnp.max(scores))), {}

    space = make_benchmark("nb201/cifar10").space
    s = Best(space)
    tokens = jax.vmap(space.sample)(jax.random.split(jax.random.PRNGKey(0), 3))
    state, _ = s.tell(jax.random.PRNGKey(1), tokens, jnp.array([0.1, 0.7, 0.3]), State(seen_init(8), jnp.int32(2),
                                                                                         jnp.float32(0.0)))  # fmt: skip
    assert bool(jnp.all(seen_contains(state.seen, jax.vmap(space.string_id)(tokens))))
    assert int(state.num_told) == 5 and float(state.best) == pytest.approx(0.7)
    state, _ = s.tell(jax.random.PRNGKey(1), tokens, jnp.zeros(3), State(None, jnp.int32(0), jnp.float32(0.0)))
    assert state.seen is None and int(state.num_told) == 3


def test_new_books_gives_the_empty_books_a_state_declares():
    """``Searcher.new_books`` fills the ``seen`` and ``num_told`` fields a state class declares (and asks for a
    capacity where it keeps a seen set); a searcher that wraps another's state keeps the books there
    (``books_in``)."""
    import jax.numpy as jnp
    from flax import struct

    from nas.core.contract import Searcher
    from nas.core.seen_set import PAD, Seen, seen_contains

    @struct.dataclass
    class Inner:
        seen: Seen
        num_told: jax.Array

    @struct.dataclass
    class Outer:
        inner: Inner
        extra: jax.Array

    class Wrapper(Searcher):
        registry_name = "wrapper"
        books_in = "inner"

        def _tell(self, key, tokens, scores, state):
            return state.replace(extra=state.extra + 1), {}

    space = make_benchmark("nb201/cifar10").space
    s = Wrapper(space)
    books = s.new_books(Inner, capacity=4)
    assert sorted(books) == ["num_told", "seen"] and int(books["num_told"]) == 0
    assert books["seen"].ids.shape == (4,) and bool(jnp.all(books["seen"].ids == PAD)) and int(books["seen"].count) == 0
    assert s.new_books(Outer) == {}
    with pytest.raises(TypeError, match="needs its capacity"):
        s.new_books(Inner)
    tokens = jax.vmap(space.sample)(jax.random.split(jax.random.PRNGKey(0), 2))
    state, _ = s.tell(jax.random.PRNGKey(1), tokens, jnp.zeros(2), Outer(Inner(**books), jnp.int32(0)))
    assert int(state.extra) == 1 and int(state.inner.num_told) == 2
    assert bool(jnp.all(seen_contains(state.inner.seen, jax.vmap(space.string_id)(tokens))))


def test_every_built_in_searcher_writes_its_update_only():
    """No registered searcher overrides ``tell``: the base keeps the books (``Searcher.tell``) or, for a
    multi-fidelity searcher, reads a NaN result as a failed one (``MultiFidelitySearcher.tell``)."""
    from nas.core.contract import Searcher
    from nas.core.multi_fidelity import MultiFidelitySearcher
    from nas.searchers import available_searchers, searcher_class

    names = available_searchers(multi_fidelity=None)
    assert len(names) >= 20
    for name in names:
        cls = searcher_class(name)
        if not issubclass(cls, Searcher):
            continue  # a peer: its own contract (nas.experiment.peer_base)
        assert cls.tell in (Searcher.tell, MultiFidelitySearcher.tell), f"{name} overrides tell"
        assert cls._tell is not Searcher._tell, f"{name} writes no _tell"


def test_a_multi_fidelity_searcher_is_told_a_nan_as_a_failed_evaluation():
    import jax.numpy as jnp

    from nas.core.multi_fidelity import Job, MultiFidelitySearcher

    class Record(MultiFidelitySearcher):
        registry_name = "record"

        def _tell(self, key, job, score, state):
            return score, {}

    s = Record(make_benchmark("nb201/cifar10").space, fidelities=(1, 2))
    job = Job.make(jnp.zeros(6, jnp.int32), 0)
    assert float(s.tell(None, job, jnp.float32(jnp.nan), None)[0]) == -np.inf
    np.testing.assert_array_equal(s.tell(None, job, jnp.array([0.5, jnp.nan]), None)[0], [0.5, -np.inf])
    assert float(s.tell_if(None, job, jnp.float32(0.25), jnp.float32(0.0), jnp.bool_(True))[0]) == 0.25


@pytest.mark.parametrize("name", ["nsga2", "mo_regularized_evolution", "parego_local_search"])
def test_the_base_checks_a_multi_objective_searchers_scores(name):
    """``Searcher.tell`` refuses scores that are not f32[B, M] for a multi-objective searcher, in one line naming
    the shape, before the searcher's ``_tell`` runs."""
    import jax.numpy as jnp

    s = make_searcher(name, make_benchmark("nb201/cifar10").space, num_objectives=2, batch_size=2)
    state = s.init(jax.random.PRNGKey(0))
    tokens, state = s.ask(jax.random.PRNGKey(1), state)
    with pytest.raises(ValueError, match=r"is told scores f32\[2, 2\].*got shape \(2,\)"):
        s.tell(jax.random.PRNGKey(2), tokens, jnp.zeros(2), state)
