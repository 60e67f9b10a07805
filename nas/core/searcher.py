"""The searcher contract, searcher options and the registry (evosax style).

A searcher is a stateless object: a space plus its options. All methods are pure::

    state = searcher.init(key)
    tokens, state = searcher.ask(key, state)          # int32[B, N]
    state, metrics = searcher.tell(key, tokens, scores, state)

``scores`` are f32[B] validation scores, higher is better (``-inf`` for a
failed or invalid evaluation). ``state`` is a pytree (``flax.struct.dataclass``),
so a whole search is ``lax.scan`` over ask/query/tell and many seeds are
``vmap``. ``metrics`` is a dict of f32 scalars with the same keys every step.

A multi-objective searcher (``num_objectives`` M > 1, an option) is told ``scores`` f32[B, M]
instead, every column to maximize: ``[valid, -latency, ...]`` (``spaces.benchmarks.metrics``;
``-inf`` throughout for a failed evaluation). The runner builds that vector from the metrics a run
names; a host study builds it from a user's values.

**Options are the searcher's identity.** Each searcher declares its options as a
frozen dataclass of plain values (``SearcherOptions`` and subclasses; a subclass
adds fields or changes defaults, never restates the base ones). Every value is
checked against the field's type, and a float option refuses NaN and infinities
unless its field says what they mean (``metadata={NON_FINITE: "..."}``). Two searchers
with the same class, space and options are equal: compiled programs are cached
on them and checkpoints are fingerprinted by them (``identity``), so a run
resumes in a new process by construction. A config entry maps one to one onto
the option fields (``make_searcher(name, space, **options)``).

**Hooks the runner may use** (defaults on ``Searcher``):

- ``breakpoints()``: steps at which the searcher's static program changes
  (BO's padded data buckets); the host loop never runs a compiled chunk across
  one. Default: none.
- ``program_for(lo, hi)``: the searcher that runs steps ``[lo, hi)``, a static
  variant with the same state shapes (BO: a fit on a fixed number of rows).
  Default: ``self``.
- ``splits_over_devices``: whether the seeds of a run may be split over
  devices (``nas.engine.devices``). Default: True.
- ``xla_optimization_level``: XLA's backend optimization level for the
  searcher's compiled programs (``nas.engine.host_loop``), or None for XLA's default
  (3). Gather- and compare-bound searchers set 1: LLVM's work, most of their
  compile time, halves while their run time barely moves (docs/scale.md). An
  ``--xla_backend_optimization_level`` in ``XLA_FLAGS`` wins. Default: None.
- ``cpu_fusion_emitters``: False compiles the searcher's programs on a CPU with XLA's
  older loop emitters instead of its fusion emitters (``xla_cpu_use_fusion_emitters``):
  about 40 % less compile time, the same histories where a step is gathers, compares
  and integer arithmetic; a network's training can round differently, so searchers that
  train one keep None (docs/scale.md). A setting in ``XLA_FLAGS`` wins; an XLA that has
  retired the option compiles with its default (``nas.core.xla_options``). Default: None.
  The ``init`` program, which runs once, compiles with the loop emitters for every searcher
  (``init_compiler_options``: the same initial state, a fraction of the compile).

Add a searcher: write one module with an options dataclass, a state dataclass
and a ``Searcher`` subclass decorated with ``@register("name")``, and import
it in ``nas/searchers/__init__.py`` (see the README).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import typing
from collections.abc import Hashable
from typing import Any, ClassVar

import jax
import numpy as np

from nas.core.xla_options import compile_option_known
from spaces.base import Space
from spaces.files import DataError
from spaces.names import did_you_mean, lookup

SEARCHERS: dict[str, type[Searcher]] = {}


def _cpu_emitters_option(on: bool) -> dict:
    """``{"xla_cpu_use_fusion_emitters": on}`` on a CPU whose XLA knows the option (retired after jaxlib
    0.10) and where ``XLA_FLAGS`` does not set it (the user's flag wins); else nothing."""
    if "xla_cpu_use_fusion_emitters" in os.environ.get("XLA_FLAGS", "") or jax.default_backend() != "cpu":
        return {}
    return {"xla_cpu_use_fusion_emitters": on} if compile_option_known("xla_cpu_use_fusion_emitters", on) else {}


@dataclasses.dataclass(frozen=True)
class SearcherOptions:
    """Options every searcher has.

    Attributes:
      batch_size: strings asked per step (``B``).
      max_queries: the query budget of a run; the last batch is cut to it.
    """

    batch_size: int = 1
    max_queries: int = 150
    # num_init random strings start the search in whole batches, below the budget (the BO loops)
    INIT_IN_BATCHES: ClassVar[bool] = False

    def __post_init__(self):
        try:
            for f in dataclasses.fields(self):
                object.__setattr__(self, f.name, _coerce(type(self), f, getattr(self, f.name)))
            self.check()
        except (OptionError, DataError):  # a file an option names keeps its own one-line class
            raise
        except ValueError as e:  # every refusal of a value is an OptionError: one line in every command
            raise OptionError(str(e)) from None

    def check(self) -> None:
        """Raises ``ValueError`` naming the option and its allowed values; subclasses extend it."""
        positive(self, "batch_size", "max_queries")

    @classmethod
    def fit_defaults(cls, given: dict) -> dict:
        """Values for options that ``given`` leaves out whose defaults cannot run beside it (``make_options``
        applies them; an option the caller gives is never changed, and defaults that fit stay as they are):

        - a default ``batch_size`` above ``max_queries`` becomes ``max_queries``;
        - with ``INIT_IN_BATCHES``, a default ``num_init`` that is not a multiple of the batch or not below
          the budget becomes the largest multiple of the batch below ``max_queries`` (one batch at least; a
          default batch is first cut to half the budget, so that a model-based batch follows the random ones).
        """
        defaults = {f.name: f.default for f in dataclasses.fields(cls)}
        budget = given.get("max_queries", defaults["max_queries"])
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
            return {}  # refused by check()
        out = {}
        batch = given.get("batch_size", defaults["batch_size"])
        if "batch_size" not in given and batch > budget:
            batch = out["batch_size"] = budget
        init = defaults.get("num_init")
        if cls.INIT_IN_BATCHES and "num_init" not in given and isinstance(batch, int) and batch >= 1:
            if init % batch or init >= budget:
                if "batch_size" not in given:
                    batch = out["batch_size"] = min(batch, max(1, budget // 2))
                out["num_init"] = max(batch, min(init // batch * batch, (budget - 1) // batch * batch))
        return out


class OptionError(ValueError):
    """A searcher option value that cannot run (or an option the searcher does not have); the message names it."""


def positive(options, *names: str) -> None:
    """``ValueError`` unless every named option is >= 1."""
    for name in names:
        if getattr(options, name) < 1:
            raise ValueError(f"{name} must be >= 1, got {getattr(options, name)}")


def one_of(options, name: str, choices) -> None:
    """``ValueError`` unless option ``name`` is one of ``choices`` (with a did-you-mean hint)."""
    value = getattr(options, name)
    if value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}, got {value!r}.{did_you_mean(value, choices)}")


def feature_kind(space: Space, requested: str, preferred: tuple[str, ...]) -> str:
    """The encoding a searcher reads: ``requested``, or for ``"auto"`` the first of ``preferred`` (then
    ``"onehot"``) that ``space`` provides; ``ValueError`` naming the space's kinds otherwise."""
    kinds = tuple(getattr(space, "feature_kinds", ("onehot",)))
    if requested == "auto":
        requested = next(k for k in tuple(preferred) + ("onehot",) if k in kinds)
    if requested not in kinds:
        raise ValueError(
            f"encoding {requested!r} is not a feature kind of space {space.name!r} (it has {list(kinds)}); "
            "pass one of those, or 'auto'"
        )
    return requested


_PLAIN = {"int": int, "float": float, "bool": bool, "str": str}
# field metadata key: a float option for which inf or NaN means something (``dataclasses.field(metadata=...)``);
# every other float option refuses them, so a typo like eta=inf never runs and is recorded as null
NON_FINITE = "non_finite_means"


def _coerce(cls, field: dataclasses.Field, value):
    """A config value as the field's declared type (int -> float; integral float -> int), or a clear error."""
    hint = typing.get_type_hints(cls).get(field.name, field.type)
    want = _PLAIN.get(getattr(hint, "__name__", str(hint)))
    if want is None:
        return value
    if isinstance(value, np.generic):  # numpy scalars from arrays or configs
        value = value.item()
    if want is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if want is int and isinstance(value, float) and value.is_integer():
        return int(value)
    if want is int and isinstance(value, bool) or not isinstance(value, want):
        raise ValueError(f"option {field.name} must be {want.__name__}, got {value!r} ({type(value).__name__})")
    if want is float and not math.isfinite(value) and not field.metadata.get(NON_FINITE):
        raise ValueError(f"option {field.name} must be a finite number, got {value!r}")
    return value


class Searcher:
    """Base class: a space and frozen options; subclasses implement ``init``, ``ask`` and ``tell``.

    Subclasses set ``Options`` (their options dataclass) and may override
    ``setup`` to derive static values (a policy network, a config of a
    surrogate) and to check options against the space.
    """

    registry_name: ClassVar[str] = "searcher"
    Options: ClassVar[type[SearcherOptions]] = SearcherOptions
    splits_over_devices: ClassVar[bool] = True
    multi_fidelity: ClassVar[bool] = False  # True: the job contract of nas.core.multi_fidelity
    xla_optimization_level: ClassVar[int | None] = None
    cpu_fusion_emitters: ClassVar[bool | None] = None

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
        raise NotImplementedError

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
        """Options for ``jax.jit(..., compiler_options=...)`` of this searcher's programs (see the hooks)."""
        opts = {}
        level = self.xla_optimization_level
        if level is not None and "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
            opts["xla_backend_optimization_level"] = int(level)
        if self.cpu_fusion_emitters is not None:
            opts.update(_cpu_emitters_option(bool(self.cpu_fusion_emitters)))
        return opts or None

    def init_compiler_options(self) -> dict | None:
        """Options for the ``init`` program, compiled once and run once per run.

        A searcher that tunes its level (the hooks above) compiles its init at level 0. On a CPU every
        init compiles with XLA's loop emitters: an init is random draws and elementwise transforms of
        them, and with the fusion emitters LLVM unrolled the nested small loops of chained key
        derivations (``fold_in``, then ``split``, then a draw) into one kernel that took 11.6 s to
        compile for ReACTS (its whole init: 12.5 s against 1.7 s). The initial state is the same bit for
        bit with either emitter for every registered searcher (``tests/test_compiler_hooks.py``,
        ``scripts.bench.bench_compile`` digests). A setting in ``XLA_FLAGS`` wins.
        """
        opts = dict(self.compiler_options() or {})
        if opts:
            opts["xla_backend_optimization_level"] = 0
        opts.update(_cpu_emitters_option(False))
        return opts or None

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


def register(name: str):
    """Class decorator: registers a ``Searcher`` subclass under ``name``."""

    def deco(cls):
        if name in SEARCHERS:
            raise ValueError(f"searcher {name!r} registered twice")
        SEARCHERS[name] = cls
        cls.registry_name = name
        return cls

    return deco


def _ensure_registered() -> None:
    import nas.searchers  # noqa: F401  (importing the package registers the built-in searchers)


def available_searchers(multi_fidelity: bool | None = False) -> list[str]:
    """Registered searchers: single-fidelity ones (default; they follow the batch ``ask/tell`` contract),
    multi-fidelity ones (``True``, ``nas.core.multi_fidelity``) or all (``None``)."""
    _ensure_registered()
    return sorted(
        n
        for n, cls in SEARCHERS.items()
        if multi_fidelity is None or getattr(cls, "multi_fidelity", False) == multi_fidelity
    )


def searcher_class(name: str) -> type[Searcher]:
    _ensure_registered()
    return lookup("searcher", name, SEARCHERS)


def searcher_options(name: str) -> list[str]:
    """The option names of searcher ``name`` (its options dataclass fields)."""
    return [f.name for f in dataclasses.fields(searcher_class(name).Options)]


def check_option_names(name: str, options_cls: type[SearcherOptions], options: dict) -> dict:
    """``options`` unchanged, or a ``ValueError`` naming each unknown option with a did-you-mean hint."""
    fields = [f.name for f in dataclasses.fields(options_cls)]
    bad = [k for k in options if k not in fields]
    if bad:
        hints = "".join(did_you_mean(k, fields) for k in bad)
        raise OptionError(f"searcher {name!r} has no option(s) {bad}.{hints} Its options: {fields}")
    return options


def make_options(name: str, **options) -> SearcherOptions:
    """The options dataclass of searcher ``name`` built from config values (names and values checked); options
    left out take their defaults, fitted to a small budget where a default cannot run (``fit_defaults``)."""
    cls = searcher_class(name).Options
    check_option_names(name, cls, options)
    return cls(**{**cls.fit_defaults(options), **options})


def make_searcher(name: str, space: Space, **options) -> Searcher:
    """Builds registered searcher ``name`` on ``space``; unknown names, options or bad values fail loudly."""
    return searcher_class(name)(space, make_options(name, **options))
