"""Name lookups in registries, with a "did you mean" hint for typos."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import TypeVar

T = TypeVar("T")


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """`` Did you mean ['x']?`` for the closest choices, or an empty string."""
    close = difflib.get_close_matches(str(name), list(choices), n=3)
    return f" Did you mean {close}?" if close else ""


def unknown(kind: str, name: str, choices: Iterable[str]) -> str:
    """The message for an unknown ``kind`` called ``name``: the hint and every valid name."""
    choices = sorted(choices)
    return f"unknown {kind} {name!r}.{did_you_mean(name, choices)} Registered: {choices}"


class UnknownName(ValueError):
    """A name no registry holds (a searcher, a benchmark, an option); the message lists the valid ones."""


def lookup(kind: str, name: str, registry: Mapping[str, T]) -> T:
    """``registry[name]``, or an ``UnknownName`` error naming the closest registered names."""
    if name not in registry:
        raise UnknownName(unknown(kind, name, registry))
    return registry[name]
