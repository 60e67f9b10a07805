"""The searcher contract and the registry (evosax style).

A searcher is a stateless object holding static configuration (the space, the
batch size, the query budget, its hyperparameters). All methods are pure:

    state = searcher.init(key)
    tokens, state = searcher.ask(key, state)          # int32[B, N]
    state, metrics = searcher.tell(key, tokens, scores, state)

``scores`` are f32[B] validation scores, higher is better (``-inf`` for
invalid strings). ``state`` is a pytree (``flax.struct.dataclass``), so a
whole search is ``lax.scan`` over ask/query/tell, and many seeds are ``vmap``.
``metrics`` is a dict of scalars (same keys every step) the runner logs.

Searchers register under a short name with ``@register("name")``;
``make_searcher(name, space, **kwargs)`` builds one and rejects unknown names
and unknown keyword arguments with the list of valid ones.
"""

from __future__ import annotations

import difflib
import inspect
from typing import Any

import jax

from spaces.base import Space

SEARCHERS: dict[str, type[Searcher]] = {}


def register(name: str):
    def deco(cls):
        if name in SEARCHERS:
            raise ValueError(f"searcher {name!r} registered twice")
        SEARCHERS[name] = cls
        cls.registry_name = name
        return cls

    return deco


class Searcher:
    """Base class. Subclasses implement ``init``, ``ask`` and ``tell``."""

    registry_name: str = "searcher"

    def __init__(self, space: Space, batch_size: int = 1, max_queries: int = 150):
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if max_queries < 1:
            raise ValueError(f"max_queries must be >= 1, got {max_queries}")
        self.space = space
        self.batch_size = int(batch_size)
        self.max_queries = int(max_queries)

    @property
    def num_steps(self) -> int:
        """ask/tell steps needed to spend ``max_queries``."""
        return -(-self.max_queries // self.batch_size)

    def init(self, key: jax.Array) -> Any:
        raise NotImplementedError

    def ask(self, key: jax.Array, state: Any) -> tuple[jax.Array, Any]:
        raise NotImplementedError

    def tell(self, key: jax.Array, tokens: jax.Array, scores: jax.Array, state: Any) -> tuple[Any, dict]:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(space={self.space.name}, B={self.batch_size}, budget={self.max_queries})"


def _ensure_registered() -> None:
    # importing the package registers every built-in searcher
    import nas.searchers  # noqa: F401


def available_searchers() -> list[str]:
    _ensure_registered()
    return sorted(SEARCHERS)


def searcher_kwargs(name: str) -> list[str]:
    _ensure_registered()
    cls = SEARCHERS[name]
    params = inspect.signature(cls.__init__).parameters
    return [p for p in params if p not in ("self", "space")]


def make_searcher(name: str, space: Space, **kwargs) -> Searcher:
    """Builds a registered searcher; unknown names or kwargs fail loudly."""
    _ensure_registered()
    if name not in SEARCHERS:
        close = difflib.get_close_matches(name, SEARCHERS, n=3)
        hint = f" Did you mean {close}?" if close else ""
        raise ValueError(f"unknown searcher {name!r}.{hint} Registered: {sorted(SEARCHERS)}")
    allowed = searcher_kwargs(name)
    bad = [k for k in kwargs if k not in allowed]
    if bad:
        raise ValueError(f"searcher {name!r} has no option(s) {bad}; its options are {allowed}")
    return SEARCHERS[name](space, **kwargs)
