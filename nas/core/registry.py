"""The searcher registry: a name for each ``Searcher`` class, and searchers built from config values.

The implementations register themselves into ``SEARCHERS`` (``@register("name")`` on the class); this
module imports none of them, so a searcher module may import it without a cycle. The built-in searchers
are registered by importing ``nas.searchers``, which is where the full registry is read from::

    from nas.searchers import available_searchers, make_searcher

``nas.searchers`` re-exports every function here; calling them from this module sees only the searchers
imported so far.
"""

from __future__ import annotations

import dataclasses

from nas.core.contract import Searcher
from nas.core.options import SearcherOptions, check_option_names
from spaces.base import Space
from spaces.names import lookup

__all__ = [
    "SEARCHERS",
    "available_searchers",
    "check_option_names",
    "make_options",
    "make_searcher",
    "register",
    "searcher_class",
    "searcher_options",
]

SEARCHERS: dict[str, type[Searcher]] = {}


def register(name: str):
    """Class decorator: registers a ``Searcher`` subclass under ``name``."""

    def deco(cls):
        if name in SEARCHERS:
            raise ValueError(f"searcher {name!r} registered twice")
        SEARCHERS[name] = cls
        cls.registry_name = name
        return cls

    return deco


def available_searchers(multi_fidelity: bool | None = False) -> list[str]:
    """Registered searchers: single-fidelity ones (default; they follow the batch ``ask/tell`` contract),
    multi-fidelity ones (``True``, ``nas.core.multi_fidelity``) or all (``None``)."""
    return sorted(
        n
        for n, cls in SEARCHERS.items()
        if multi_fidelity is None or getattr(cls, "multi_fidelity", False) == multi_fidelity
    )


def searcher_class(name: str) -> type[Searcher]:
    """The class registered as ``name``; an error naming the registered ones (with a did-you-mean hint) otherwise."""
    return lookup("searcher", name, SEARCHERS)


def searcher_options(name: str) -> list[str]:
    """The option names of searcher ``name`` (its options dataclass fields)."""
    return [f.name for f in dataclasses.fields(searcher_class(name).Options)]


def make_options(name: str, **options) -> SearcherOptions:
    """The options dataclass of searcher ``name`` built from config values (names and values checked); options
    left out take their defaults, fitted to a small budget where a default cannot run (``fit_defaults``)."""
    cls = searcher_class(name).Options
    check_option_names(name, cls, options)
    return cls(**{**cls.fit_defaults(options), **options})


def make_searcher(name: str, space: Space, **options) -> Searcher:
    """Builds registered searcher ``name`` on ``space``; unknown names, options or bad values fail loudly."""
    return searcher_class(name)(space, make_options(name, **options))
