"""The searcher contract: the ``Searcher`` base class and the hooks the runner may use (evosax style).

A searcher is a stateless object: a space plus its options. All methods are pure::

    state = searcher.init(key)
    tokens, state = searcher.ask(key, state)          # int32[B, N]
    state, metrics = searcher.tell(key, tokens, scores, state)

``scores`` are f32[B] validation scores, higher is better (``-inf`` for a
failed or invalid evaluation). ``state`` is a pytree (``flax.struct.dataclass``),
so a whole search is ``lax.scan`` over ask/query/tell and many seeds are
``vmap``. ``metrics`` is a dict of f32 scalars with the same keys every step.

**The base keeps the books** (evosax's ``tell``/``_tell``): a searcher writes its update as ``_tell``,
and ``tell`` then adds the told strings' ids to the state's never-re-query set (its ``seen`` field) and
their number to its ``num_told`` count, where the state has those fields (``record_told``; a searcher
that wraps another's state names the field holding it, ``books_in``). A searcher's ``ask`` reads ``seen``
to propose only strings not queried yet (``nas.core.dedup.fill_unique``). The books start empty from
``new_books``: a state class declares ``seen`` and/or ``num_told`` and ``init`` passes
``**self.new_books(State, capacity)`` to it, so a searcher writes its algorithm only.

A multi-objective searcher (``num_objectives`` M > 1, an option) is told ``scores`` f32[B, M]
instead (``tell`` checks the shape before ``_tell``), every column to maximize: ``[valid, -latency,
...]`` (``spaces.benchmarks.metrics``; ``-inf`` throughout for a failed evaluation). The runner builds
that vector from the metrics a run names; a host study builds it from a user's values.

**Options are the searcher's identity** (``nas.core.options``): two searchers with the same
class, space and options are equal; compiled programs are cached on them and checkpoints are
fingerprinted by them (``identity``), so a run resumes in a new process by construction.

**Hooks the runner may use** (defaults on ``Searcher``):

- ``breakpoints()``: steps at which the searcher's static program changes
  (BO's padded data buckets); the chunked loop never runs a compiled chunk across
  one. Default: none.
- ``program_for(lo, hi)``: the searcher that runs steps ``[lo, hi)``, a static
  variant with the same state shapes (BO: a fit on a fixed number of rows).
  Default: ``self``.
- ``splits_over_devices``: whether the seeds of a run may be split over
  devices (``nas.engine.devices``). Default: True.
- ``compile_profile``: what the searcher's steps are, for how the engine compiles them
  (``nas.engine.compile_policy``): ``"default"`` (XLA's defaults: steps that train a network or fit a
  surrogate), ``"compile_bound"`` (XLA level 1: gather- and compare-bound steps), ``"integer_steps"``
  (level 1 and, on a CPU, XLA's loop emitters: gathers, compares and integer arithmetic only, the same
  histories). Default: ``"default"``. A class attribute, or a property where a static variant's steps
  differ (BO's random first steps).
- ``stored_programs``: whether a Study keeps this searcher's programs lowered for the next process
  (``nas.engine.program_store``). Default (None): where ``compile_profile`` is not ``"default"`` (steps of
  gathers and compares, whose tracing and lowering are much of a warm start); a network's or a GP's
  programs, whose export and lowering cost more than they save, are traced.

Add a searcher: write one module with an options dataclass, a state dataclass
and a ``Searcher`` subclass decorated with ``@register("name")`` (``nas.core.registry``), and import
it in ``nas/searchers/__init__.py`` (see docs/tutorials/extending.md).
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from collections.abc import Hashable
from typing import Any, ClassVar

import jax
import jax.numpy as jnp

from nas.core.multi_objective import check_scores
from nas.core.options import SearcherOptions, check_option_names
from nas.core.seen_set import seen_add, seen_init
from spaces.base import Space


class Searcher:
    """Base class: a space and frozen options; subclasses implement ``init``, ``ask`` and ``_tell``
    (``tell`` runs ``_tell`` and keeps the books, ``record_told``).

    Subclasses set ``Options`` (their options dataclass) and may override
    ``setup`` to derive static values (a policy network, a config of a
    surrogate) and to check options against the space.
    """

    registry_name: ClassVar[str] = "searcher"
    Options: ClassVar[type[SearcherOptions]] = SearcherOptions
    splits_over_devices: ClassVar[bool] = True
    multi_fidelity: ClassVar[bool] = False  # True: the job contract of nas.core.multi_fidelity
    compile_profile: ClassVar[str] = "default"  # nas.engine.compile_policy.PROFILES
    stored_programs: ClassVar[bool | None] = None  # kept lowered across processes (program_store); None: by profile
    books_in: ClassVar[str | None] = None  # the state field holding the books (a wrapped searcher's state)

    def __init__(self, space: Space, options: SearcherOptions | None = None, **overrides):
        options = options if options is not None else self.Options()
        if not isinstance(options, self.Options):
            raise TypeError(f"{type(self).__name__} takes {self.Options.__name__}, got {type(options).__name__}")
        if overrides:
            options = dataclasses.replace(options, **check_option_names(self.registry_name, self.Options, overrides))
        self.space = space
        self.options = options
        self.variant: Hashable = None  # static program variant (see program_for)
        self.setup()

    def setup(self) -> None:
        """Derives static values from ``self.options`` and ``self.space``; raises ``ValueError`` on a misfit."""

    # -- derived sizes -------------------------------------------------------------
    @property
    def batch_size(self) -> int:
        return self.options.batch_size

    @property
    def max_queries(self) -> int:
        return self.options.max_queries

    @property
    def num_steps(self) -> int:
        """ask/tell steps needed to spend ``max_queries``."""
        return -(-self.max_queries // self.batch_size)

    @property
    def num_objectives(self) -> int:
        """M, the objectives ``tell`` receives (1: the score; multi-objective searchers have the option)."""
        return int(getattr(self.options, "num_objectives", 1))

    # -- the contract --------------------------------------------------------------
    def init(self, key: jax.Array) -> Any:
        raise NotImplementedError

    def ask(self, key: jax.Array, state: Any) -> tuple[jax.Array, Any]:
        raise NotImplementedError

    def tell(self, key: jax.Array, tokens: jax.Array, scores: jax.Array, state: Any) -> tuple[Any, dict]:
        """The searcher's own update (``_tell``), then the bookkeeping every searcher shares (``record_told``).

        A multi-objective searcher's ``scores`` are checked to be f32[B, M] first (``check_scores``). A searcher
        implements ``_tell``; one that overrides ``tell`` itself keeps its own books."""
        if self.num_objectives > 1:
            scores = check_scores(scores, self.num_objectives, tokens.shape[0])
        state, metrics = self._tell(key, tokens, scores, state)
        return self.record_told(tokens, state), metrics

    def _tell(self, key: jax.Array, tokens: jax.Array, scores: jax.Array, state: Any) -> tuple[Any, dict]:
        """The searcher's update from the told ``tokens`` and ``scores``: ``(state, metrics)``."""
        raise NotImplementedError

    def new_books(self, state_type: type, capacity: int | None = None) -> dict:
        """The shared fields ``state_type`` declares, empty: ``seen`` (an empty ``nas.core.seen_set.Seen``
        with room for ``capacity`` ids) and ``num_told`` (0). ``init`` passes them on::

            return MyState(**self.new_books(MyState, self.max_queries), weights=...)
        """
        fields = getattr(state_type, "__dataclass_fields__", {})
        books = {}
        if "seen" in fields:
            if capacity is None:
                raise TypeError(f"{state_type.__name__} keeps a seen set: new_books needs its capacity")
            books["seen"] = seen_init(capacity)
        if "num_told" in fields:
            books["num_told"] = jnp.int32(0)
        return books

    def record_told(self, tokens: jax.Array, state: Any) -> Any:
        """``state`` with the told strings' ids added to its never-re-query set (a ``seen`` field that is not
        None, ``nas.core.seen_set.Seen``) and their number to its ``num_told`` count, where it has them (in
        the field ``books_in`` names, where a searcher keeps its books in a wrapped state)."""
        if self.books_in is not None:
            inner = self._record_books(tokens, getattr(state, self.books_in))
            return state.replace(**{self.books_in: inner})
        return self._record_books(tokens, state)

    def _record_books(self, tokens: jax.Array, state: Any) -> Any:
        fields = getattr(state, "__dataclass_fields__", {})
        changes = {}
        if "seen" in fields and state.seen is not None:
            changes["seen"] = seen_add(state.seen, jax.vmap(self.space.string_id)(tokens))
        if "num_told" in fields:
            changes["num_told"] = state.num_told + tokens.shape[0]
        return state.replace(**changes) if changes else state

    # -- hooks for the runner --------------------------------------------------------
    def breakpoints(self) -> list[int]:
        """Steps ``t`` where ``program_for`` changes: a compiled chunk never spans one."""
        return []

    def program_for(self, lo: int, hi: int) -> Searcher:
        """The searcher (a static variant of this one, same state shapes) that runs steps ``[lo, hi)``."""
        del lo, hi
        return self

    def with_variant(self, variant: Hashable) -> Searcher:
        """A copy of this searcher with another static ``variant`` (for ``program_for``)."""
        if variant == self.variant:
            return self
        other = object.__new__(type(self))
        other.__dict__.update(self.__dict__)
        other.variant = variant
        return other

    def compiler_options(self) -> dict | None:
        """Deprecated: ``nas.engine.compile_policy.compiler_options(searcher)``."""
        return _compile_policy("compiler_options")(self)

    def init_compiler_options(self) -> dict | None:
        """Deprecated: ``nas.engine.compile_policy.init_compiler_options(searcher)``."""
        return _compile_policy("init_compiler_options")(self)

    # -- identity ----------------------------------------------------------------------
    @property
    def identity(self) -> str:
        """A stable description of what this searcher computes: name, space and options (JSON)."""
        opts = dataclasses.asdict(self.options)
        return json.dumps({"searcher": self.registry_name, "space": self.space.name, "options": opts}, sort_keys=True)

    def _key(self):
        return (type(self), id(self.space), self.options, self.variant)

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and other.space is self.space and other._key() == self._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"{type(self).__name__}(space={self.space.name}, {self.options})"


def _compile_policy(name: str):
    """The engine's function ``name``, with a warning that the method moved there (0.3)."""
    warnings.warn(
        f"Searcher.{name}() moved to the engine: call nas.engine.compile_policy.{name}(searcher) "
        "(the method goes in nasjax 0.4)",
        DeprecationWarning,
        stacklevel=3,
    )
    from nas.engine import compile_policy  # the engine's policy; it imports no searcher module

    return getattr(compile_policy, name)
