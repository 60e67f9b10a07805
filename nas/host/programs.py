"""The compiled programs a host Study runs: the searcher's ``init``/``ask``/``tell``, shared by shape.

A plain ``CategoricalSpace`` (a ``{name: [values]}`` space) or a declared order-aware ``HPOSpace`` has
jittable methods that depend on its shape alone, so every Study on a space of that shape runs its
searcher on one shared space (``program_space``) and reuses its compiled programs
(``nas.engine.program_cache.cached_jit``).

Searchers whose steps are gathers and compares (a light ``compile_profile``: random search, regularized
evolution, local search; ``nas.engine.compile_policy.study_compiler_options``) compile their Study
programs at XLA's level 0 with the emitters their chunk programs use (the loop emitters on a CPU): the
README's example's batch-of-4 ``ask`` compiled in 1.7 s instead of 3.2 s with the fusion emitters, and
proposes the same strings.

The ``init``, ``ask`` and ``tell`` programs of a searcher on a shared space (one per shape, or per
declarations of continuous ranges) are also kept as exported StableHLO (``nas.engine.program_store``), so a
second process reads them instead of tracing and lowering them again.
"""

from __future__ import annotations

import functools
import weakref

import jax

from nas.core.contract import Searcher
from nas.core.dedup import one_step_programs
from nas.engine.compile_policy import study_compiler_options
from nas.engine.devices import default_compilation_cache
from nas.engine.program_cache import cached_jit
from nas.engine.program_store import describe, stored_jit
from nas.engine.runner import INIT_FOLD
from spaces.base import CategoricalSpace, Space
from spaces.continuous_space import ContinuousSpace
from spaces.hpo import HPOSpace
from spaces.params import declarations_key, shape_key, shape_space

_SHAPES: dict[int, tuple] = {}  # id(shared space) -> (a weak reference to it, its shape): a stored program's key


@functools.lru_cache(maxsize=64)
def _grid_space(cardinalities: tuple[int, ...]) -> CategoricalSpace:
    """One space object per shape: searchers on it compare equal, so their programs are shared."""
    return CategoricalSpace("study_grid", {f"h{i}": list(range(c)) for i, c in enumerate(cardinalities)})


def _shared(space: Space, shape: tuple) -> Space:
    entry = _SHAPES.get(id(space))
    if entry is None or entry[0]() is not space:  # weak: a space of fine grids holds megabytes of values
        _SHAPES[id(space)] = (weakref.ref(space), shape)
    return space


def space_shape(space: Space) -> tuple | None:
    """The shape of a shared space from ``program_space`` (what its programs depend on); None for another."""
    entry = _SHAPES.get(id(space))
    return entry[1] if entry is not None and entry[0]() is space else None


def program_space(space: Space) -> Space:
    """The space a Study's programs are built on: for a plain ``CategoricalSpace`` (no ``canonical=``),
    whose jittable methods depend on its cardinalities alone, the shared space of that shape; likewise for
    an order-aware ``HPOSpace`` (``spaces.params.shape_space``). A ``ContinuousSpace`` is shared already (one
    per declarations, ``spaces.params.declared_space``) and is registered by them."""
    if type(space) is HPOSpace and space.order_aware:
        shared = shape_space(space)
        return _shared(shared, ("hpo_shape", shape_key(space)))
    plain = type(space) is CategoricalSpace and space.plain_product  # ids hash alike at any size: by shape
    if plain:
        return _shared(_grid_space(tuple(space.cardinalities)), ("grid", tuple(space.cardinalities)))
    declared = declarations_key(space) if type(space) is ContinuousSpace else None  # fine grids: by declarations
    return space if declared is None else _shared(space, ("continuous", declared))


def kept_program(searcher, what: str, fn, out_tree, options) -> object:
    """``fn`` jitted with ``options`` and cached per searcher (``cached_jit``), its lowered program kept in the
    store where the searcher's space is shared (``nas.engine.program_store``); ``out_tree(*args)`` is the tree
    of its result."""
    ident = describe(what, searcher, space_shape(searcher.space))
    return cached_jit(searcher, what, 0, lambda: stored_jit(fn, ident, out_tree, options))


def init_tree(init):
    """``out_tree`` for an ``init(key)`` program: its result's tree, from an abstract trace (~1 ms)."""
    return lambda key: jax.tree.structure(jax.eval_shape(init, key))


def study_programs(searcher: Searcher) -> tuple:
    """Jitted ``init(key)``, ``ask(key, step, state) -> (tokens, state, tell key)`` and ``tell``, cached per
    searcher (``nas.engine.program_cache.cached_jit``). The step keys are derived inside ``ask``, as
    ``nas.engine.runner.search_step`` does, so no key operation compiles on its own."""
    default_compilation_cache()  # kept on disk for the next process with this searcher (nas.engine.devices)
    opts, init_opts = study_compiler_options(searcher)  # level 0 for gather/compare-bound steps; init runs once

    def init(key):
        return searcher.init(jax.random.fold_in(key, INIT_FOLD))

    def ask(key, step, state):
        k_ask, _, k_tell = jax.random.split(jax.random.fold_in(key, step), 3)
        with one_step_programs():  # one unbatched step: skip the proposals its result does not read
            tokens, state = searcher.ask(k_ask, state)
        return tokens, state, k_tell

    def tell(key, tokens, scores, state):
        return searcher.tell(key, tokens, scores, state)[0], None  # the Study reads the state only

    # init too: a stored program's results are committed to their device, and a program whose arguments change
    # from uncommitted (a plain jit's results) to committed compiles again
    return (
        kept_program(searcher, "study_init", init, init_tree(init), init_opts),
        kept_program(searcher, "study_ask", ask, lambda key, step, state: jax.tree.structure((0, state, 0)), opts),
        kept_program(searcher, "study_tell", tell, lambda k, tokens, scores, st: jax.tree.structure((st, None)), opts),
    )
