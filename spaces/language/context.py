"""Creation contexts: which graph a new module or hyperparameter belongs to, and its key.

A search-space function creates modules and hyperparameters; a substitution function creates
more when its module is substituted (Algorithm 1, line 12 of Negrinho et al. 2019). Each object
is created inside a *frame* (the graph, a key prefix, a nesting depth): the top-level frame while
``Graph.build`` calls the search-space function, and one frame per substitution. An object's key
is its frame's prefix plus a counter, e.g. ``"3"`` at top level or ``"3[num_reps=2]/1"`` for the
second object created by substituting object 3 with ``num_reps=2``. Rebuilding the same space
and replaying the same values gives the same keys: flattening gives each independent
hyperparameter key a token.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

_LOCAL = threading.local()


class Frame:
    __slots__ = ("graph", "prefix", "depth", "count")

    def __init__(self, graph: Any, prefix: str, depth: int):
        self.graph, self.prefix, self.depth, self.count = graph, prefix, depth, 0


def _stack() -> list[Frame]:
    if not hasattr(_LOCAL, "stack"):
        _LOCAL.stack = []
    return _LOCAL.stack


def current() -> Frame:
    """The innermost frame, or a ``RuntimeError`` saying how objects are created."""
    stack = _stack()
    if not stack:
        raise RuntimeError(
            "language modules and hyperparameters are created inside a search-space function while a graph is "
            "built: LanguageSpace(fn).build() or spaces.language.build(fn) calls fn"
        )
    return stack[-1]


def register(obj: Any) -> tuple[Any, str]:
    """(graph, key) for a new object in the current frame."""
    frame = current()
    key = f"{frame.prefix}{frame.count}"
    frame.count += 1
    return frame.graph, key


@contextlib.contextmanager
def frame(graph: Any, prefix: str, depth: int):
    """Objects created in this block belong to ``graph`` with keys ``prefix + counter``."""
    stack = _stack()
    stack.append(Frame(graph, prefix, depth))
    try:
        yield stack[-1]
    finally:
        stack.pop()
