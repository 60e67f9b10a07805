"""Spaces of any size: string ids switch from grid rows to a 31-bit hash at 2**31 strings (spaces.string_ids),
and every registered searcher runs on spaces of 10^20 configurations and more without querying a
configuration twice, through the Study and through the compiled runner."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

import nas
from nas.core.dedup import count_repeats
from nas.core.seen_set import exact
from nas.host.objectives import is_multi_objective
from spaces.base import CategoricalSpace
from spaces.benchmarks.metrics import Metric
from spaces.declaration import declaration
from spaces.params import Float, declared_space
from spaces.string_ids import GRID_ID_LIMIT, hash_tokens
from tests.searcher_settings import cheap_options, searcher_params
from tests.test_language_searchers import LinearObjective

LIST = {f"p{i}": list(range(100)) for i in range(10)}  # 100^10 = 10^20 configurations
FLOATS = {f"x{i}": Float(0.0, 1.0) for i in range(20)}  # 101^20, about 1.2e40
SPACES = {"list": LIST, "floats": FLOATS}
QUERIES = 6  # two or three batches of the searchers' default batch sizes


def binary_space(bits: int) -> CategoricalSpace:
    return CategoricalSpace(f"bits{bits}", {f"b{i}": [0, 1] for i in range(bits)})


def test_ids_are_grid_rows_below_the_limit_and_hashes_from_it():
    below, at = binary_space(30), binary_space(31)  # 2**30 and 2**31 strings
    assert at.size == GRID_ID_LIMIT and below.ids_are_grid_rows and exact(below)
    assert at.plain_product and not at.ids_are_grid_rows and not exact(at)  # drawn by rejection, not as integers
    assert at.num_configurations == 2**31 and CategoricalSpace("big", LIST).num_configurations == 10**20
    row = np.asarray([1, 0] * 15, np.int32)
    assert int(below.string_id(row)) == int(np.dot(row.astype(np.int64), below.grid_strides))  # the exact row
    tokens = np.asarray([1, 0] * 15 + [1], np.int32)
    assert int(at.string_id(tokens)) == int(hash_tokens(tokens)) >= 0
    with pytest.raises(ValueError, match="too large for int32 ids"):
        at.mixed_radix(tokens)


def test_the_hash_kept_its_old_import_path_for_a_release():
    import spaces.language.flatten as flatten

    with pytest.warns(DeprecationWarning, match="spaces.string_ids.hash_tokens"):
        assert flatten.hash_tokens is hash_tokens


def test_a_hashed_id_is_a_function_of_the_configuration():
    """Strings that differ only in inactive tokens are one configuration, so one hashed id."""
    space = declared_space({"opt": ["sgd", "adam"], "momentum": Float(0.0, 0.99, when={"opt": ["sgd"]}),
                            **{f"x{i}": Float(0.0, 1.0) for i in range(6)}})  # fmt: skip
    assert space.size >= GRID_ID_LIMIT
    adam, adam_momentum = (np.asarray([1, m] + [3] * 6, np.int32) for m in (0, 7))  # momentum inactive
    sgd, sgd_momentum = (np.asarray([0, m] + [3] * 6, np.int32) for m in (0, 7))  # momentum active
    assert int(space.string_id(adam)) == int(space.string_id(adam_momentum))
    assert int(space.string_id(sgd)) != int(space.string_id(sgd_momentum))


def test_hash_collisions_are_as_rare_as_a_random_functions():
    """200,000 random configurations of the 10^20 space: pairs sharing a hashed id number about n^2 / 2^32
    (9.3), the bound the docstring of spaces.string_ids states."""
    space = CategoricalSpace("big", LIST)
    n = 200_000
    tokens = np.random.default_rng(0).integers(0, 100, size=(n, 10)).astype(np.int32)
    ids = np.asarray(jax.jit(jax.vmap(space.string_id))(tokens))
    assert ids.min() >= 0
    strings = len({t.tobytes() for t in tokens})
    pairs = strings - len(set(ids.tolist()))  # ids lost to collisions (distinct strings sharing one)
    assert pairs <= 3 * n**2 / 2**32, pairs


def test_repeats_of_a_large_grid_are_counted_by_the_strings():
    space = CategoricalSpace("big", LIST)
    run = np.asarray([[[1] * 10, [2] * 10, [1] * 10]], np.int32)
    assert count_repeats(space, run) == 1
    assert declaration(space)["type"] == "CategoricalSpace"  # still kept in a study file as data


def test_a_study_of_a_huge_space_is_kept_and_continues(tmp_path):
    """The 10^20 list space in a study file: loaded, it continues as the study that never stopped."""
    path = str(tmp_path / "study.jsonl")
    kept = nas.create_study(LIST, searcher="random_search", max_queries=6, seed=1, storage=path)
    whole = nas.create_study(LIST, searcher="random_search", max_queries=6, seed=1)
    for study in (kept, whole):
        for _ in range(3 if study is kept else 4):
            trial = study.ask()
            study.tell(trial, _value(trial.params))
    kept.close()
    loaded = nas.load_study(path)
    trial = loaded.ask()
    loaded.tell(trial, _value(trial.params))
    assert [t.params for t in loaded.trials] == [t.params for t in whole.trials]
    loaded.close()


def _searcher_options(name: str, kind: str) -> dict:
    opts = cheap_options(name)
    opts.pop("max_queries", None)
    if name == "warm_start":  # the test settings' design is of NAS-Bench-201: two strings of this space, random search
        n = len(SPACES[kind])
        opts = {"batch_size": 3, "design": f"{','.join(['1'] * n)};{','.join(['2'] * n)}", "num_design": 2}
    return opts


REFUSES_GENERIC_SPACES = {"nasbot": "not one it can read"}  # OTMANN reads cells and MLPs: its one-line error


def _build_or_skip(name: str, build):
    """``build()``, or a skip with the searcher's own one-line refusal where it cannot take a generic space."""
    if name in REFUSES_GENERIC_SPACES:
        with pytest.raises(ValueError, match=REFUSES_GENERIC_SPACES[name]) as refused:
            build()
        pytest.skip(str(refused.value).splitlines()[0])
    return build()


def _value(params: dict) -> float:
    return float(sum(hash(repr(v)) % 97 for v in params.values())) / 97


@pytest.mark.parametrize("kind", list(SPACES))
@pytest.mark.parametrize("name", searcher_params(nas.available_searchers()))
def test_every_searcher_asks_new_configurations_of_a_huge_space_through_the_study(name, kind):
    mo = is_multi_objective(name)
    directions = ["minimize", "minimize"] if mo else None
    opts = _searcher_options(name, kind)
    study = _build_or_skip(
        name,
        lambda: nas.create_study(
            SPACES[kind], searcher=name, max_queries=QUERIES, seed=1, directions=directions, **opts
        ),
    )
    asked = []
    for _ in range(QUERIES):
        trial = study.ask()
        asked.append(tuple(sorted(trial.params.items())))
        v = _value(trial.params)
        study.tell(trial, [v, -v] if mo else v)
    assert len(set(asked)) == QUERIES, f"{name}: a configuration was asked twice"


@struct.dataclass
class SizedObjective(LinearObjective):
    """The linear objective with a second metric for the multi-objective searchers: the sum of the tokens."""

    metric_info = (Metric("size", "tokens"),)

    def query(self, key, tokens):
        return {**super().query(key, tokens), "size": jnp.sum(tokens, axis=-1).astype(jnp.float32)}


@functools.cache
def _objective(kind: str) -> SizedObjective:
    space = CategoricalSpace("big", LIST) if kind == "list" else declared_space(FLOATS)
    weights = jax.random.uniform(jax.random.PRNGKey(0), (space.feature_dim("onehot"),))
    return SizedObjective(weights=weights, space=space)


@pytest.mark.parametrize("kind", list(SPACES))
@pytest.mark.parametrize("name", searcher_params(nas.available_searchers()))
def test_every_searcher_runs_on_a_huge_space_in_the_compiled_runner(name, kind):
    obj = _objective(kind)
    opts = _searcher_options(name, kind)
    searcher = _build_or_skip(name, lambda: nas.make_searcher(name, obj.space, max_queries=QUERIES, **opts))
    metrics = ("size",) if is_multi_objective(name) else ()
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    hist = jax.jit(jax.vmap(nas.make_search(searcher, metrics), in_axes=(0, None)))(keys, obj)
    for seed_tokens in np.asarray(hist.tokens):
        canonical = np.asarray(jax.vmap(obj.space.canonical)(seed_tokens))
        assert len({row.tobytes() for row in canonical}) == QUERIES, f"{name}: a configuration was queried twice"
    assert np.all(np.isfinite(np.asarray(hist.score)))


BUDGETS = (1.0, 3.0, 9.0)


@struct.dataclass
class FidelityObjective(SizedObjective):
    """The sized objective at three budgets (the score does not depend on the budget; the cost is it)."""

    fidelities = BUDGETS
    fidelity_unit = "epochs"

    def query(self, key, tokens, fidelity=None):
        res = super().query(key, tokens)
        budget = jnp.asarray(BUDGETS)[jnp.full(tokens.shape[:1], len(BUDGETS) - 1) if fidelity is None else fidelity]
        return {**res, "cost": budget}


MF_SEARCHERS = nas.available_searchers(multi_fidelity=True)


@pytest.mark.parametrize("kind", list(SPACES))
@pytest.mark.parametrize("name", searcher_params(MF_SEARCHERS))
def test_every_multi_fidelity_searcher_starts_new_configurations_of_a_huge_space_through_the_study(name, kind):
    opts = _searcher_options(name, kind)
    make = functools.partial(nas.create_study, SPACES[kind], searcher=name, max_queries=4, fidelities=list(BUDGETS))
    if name == "mo_asha":  # a Study refuses it with its one line: MO-ASHA runs in the compiled runner (tested below)
        with pytest.raises(ValueError, match="MO-ASHA runs in the compiled runner") as refused:
            make(seed=1, **opts)
        pytest.skip(str(refused.value))
    study = make(seed=1, **opts)
    asked = []
    for _ in range(10):
        trial = study.ask()
        asked.append((tuple(sorted(trial.params.items())), trial.fidelity))
        study.tell(trial, _value(trial.params))
    assert len(set(asked)) == len(asked), f"{name}: a configuration was evaluated twice at one fidelity"
    assert len({p for p, _ in asked}) > 1


@pytest.mark.parametrize("kind", list(SPACES))
@pytest.mark.parametrize("name", searcher_params(MF_SEARCHERS))
def test_every_multi_fidelity_searcher_runs_on_a_huge_space_in_the_compiled_runner(name, kind):
    from nas.engine.multi_fidelity_runner import make_mf_search

    base = _objective(kind)
    obj = FidelityObjective(weights=base.weights, space=base.space)
    searcher = nas.make_searcher(name, obj.space, max_queries=4, fidelities=BUDGETS, **_searcher_options(name, kind))
    metrics = ("size",) if searcher.num_objectives > 1 else ()
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    hist = jax.jit(jax.vmap(make_mf_search(searcher, metrics), in_axes=(0, None)))(keys, obj)
    for tokens, fidelity in zip(np.asarray(hist.tokens), np.asarray(hist.fidelity)):
        done = fidelity >= 0
        canonical = np.asarray(jax.vmap(obj.space.canonical)(tokens[done]))
        pairs = [(row.tobytes(), f) for row, f in zip(canonical, fidelity[done])]
        assert len(pairs) > 1 and len(set(pairs)) == len(pairs), f"{name}: a configuration evaluated twice at one"
