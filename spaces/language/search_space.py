"""A search space written in the language, and architectures as sequences of assigned values.

``LanguageSpace(fn, name)`` wraps a search-space function ``fn() -> (inputs, outputs)``. Each
``build()`` calls ``fn`` afresh (Negrinho et al. 2019, Appendix E.2: ``search_space_fn``), so
every architecture starts from the initial space (frame a of Figure 5).

An architecture (``spaces.language.architecture.Architecture``) is the ordered sequence of values
assigned to independent hyperparameters during the traversal (Algorithm 3); ``specify`` assigns
them and ``LanguageSpace.replay`` rebuilds the same terminal space from it, hence the same model
(``compile``) and, with the same parameters, the same outputs. ``flatten`` gives the space's
fixed-length token form (``spaces.language.flatten``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spaces.language.architecture import Architecture
from spaces.language.compile import CompiledNetwork, compile_graph
from spaces.language.core import DEFAULT_MAX_DEPTH, Graph, unassigned_independent
from spaces.language.flatten import FlatLanguageSpace


def specify(g: Graph, values: Sequence[Any]) -> Graph:
    """Assigns ``values`` in traversal order until ``g`` is terminal (a clear error on a mismatch)."""
    values = list(values)
    i = 0
    for h in unassigned_independent(g):
        if i >= len(values):
            raise ValueError(f"architecture has {len(values)} values but the space needs more (next: {h.name})")
        try:
            h.assign_value(values[i])
        except ValueError as e:
            raise ValueError(f"value {i} of the architecture: {e}") from e
        i += 1
    if i != len(values):
        raise ValueError(f"architecture has {len(values)} values but the space is terminal after {i}")
    return g


def random_specify(g: Graph, rng: np.random.Generator) -> list[Any]:
    """Algorithm 3, lines 4-9: uniform values along the traversal; returns the values assigned."""
    out = []
    for h in unassigned_independent(g):
        v = h.values[int(rng.integers(len(h.values)))]
        h.assign_value(v)
        out.append(v)
    return out


class LanguageSpace:
    """A named search-space function with the operations search algorithms need."""

    def __init__(self, fn: Callable[[], tuple[dict, dict]], name: str, max_depth: int = DEFAULT_MAX_DEPTH):
        self.fn, self.name, self.max_depth = fn, name, max_depth

    def __repr__(self) -> str:
        return f"LanguageSpace({self.name!r})"

    def build(self) -> Graph:
        """The initial search space (a fresh graph)."""
        return Graph.build(self.fn, self.max_depth)

    def replay(self, arch: Architecture | Sequence[Any]) -> Graph:
        """The terminal space of ``arch`` (an ``Architecture`` of this space, its JSON dict or its list of values)."""
        return specify(self.build(), Architecture.of(arch, self.name).values)

    def sample(self, rng: np.random.Generator) -> tuple[Graph, Architecture]:
        """A uniformly specified terminal space (Algorithm 3) and its architecture."""
        g = self.build()
        return g, Architecture(tuple(random_specify(g, rng)), self.name)

    def compile(self, arch: Architecture | Sequence[Any]) -> CompiledNetwork:
        """The flax model of ``arch``."""
        return compile_graph(self.replay(arch))

    def count(self, **kwargs) -> int:
        """Number of distinct architectures (``spaces.language.counting.count_architectures``)."""
        from spaces.language.counting import count_architectures

        return count_architectures(self, **kwargs)

    def flatten(self, **kwargs) -> FlatLanguageSpace:
        """The fixed-length token space of this (bounded) space (``spaces.language.flatten``)."""
        return FlatLanguageSpace(self, **kwargs)
