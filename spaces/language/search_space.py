"""A search space written in the language, and architectures as sequences of assigned values.

``LanguageSpace(fn, name)`` wraps a search-space function ``fn() -> (inputs, outputs)``. Each
``build()`` calls ``fn`` afresh (Negrinho et al. 2019, Appendix E.2: ``search_space_fn``), so
every architecture starts from the initial space (frame a of Figure 5).

An architecture is the ordered sequence of values assigned to independent hyperparameters
during the traversal (Algorithm 3): ``Architecture(values)``. It serializes to JSON and
``LanguageSpace.replay`` rebuilds the same terminal space from it, hence the same model
(``compile``) and, with the same parameters, the same outputs.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from spaces.language.compile import CompiledNetwork, compile_graph
from spaces.language.core import DEFAULT_MAX_DEPTH, Graph, unassigned_independent

JSON_FORM = '{"space": name, "values": [...]}'


@dataclasses.dataclass(frozen=True)
class Architecture:
    """The values assigned, in traversal order, to reach one terminal space of ``space``."""

    values: tuple
    space: str = ""

    def to_json(self) -> str:
        try:
            return json.dumps({"space": self.space, "values": list(self.values)})
        except TypeError as e:
            raise TypeError(f"architecture values must be JSON values (numbers, strings, lists): {e}") from e

    @classmethod
    def from_json(cls, text: str | bytes) -> Architecture:
        try:
            data = json.loads(text)
        except (TypeError, ValueError) as e:
            raise ValueError(f"not an architecture in JSON ({e}); expected {JSON_FORM}") from e
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, data: Any) -> Architecture:
        """From the parsed JSON ``{"space": name, "values": [...]}`` (a clear error on any other shape)."""
        if not isinstance(data, dict) or not isinstance(data.get("values"), list):
            raise ValueError(f"an architecture in JSON is {JSON_FORM}, got {data!r:.80}")
        if not isinstance(data.get("space", ""), str):
            raise ValueError(f"an architecture's space is a name (a string), got {data['space']!r}")
        return cls(values=tuple(_freeze(v) for v in data["values"]), space=data.get("space", ""))

    @classmethod
    def of(cls, spec: Any, space: str) -> Architecture:
        """``spec`` (an ``Architecture``, its JSON dict or a list of values) as an architecture of the space named
        ``space``; an architecture of another space is refused, not replayed into this one."""
        if isinstance(spec, dict):
            spec = cls.from_dict(spec)
        elif isinstance(spec, (list, tuple)):
            spec = cls(tuple(spec), space)
        elif not isinstance(spec, Architecture):
            raise ValueError(f"an architecture is an Architecture, {JSON_FORM} or a list of values, got {spec!r:.80}")
        if spec.space and spec.space != space:
            raise ValueError(f"an architecture of space {spec.space!r} cannot be replayed into space {space!r}")
        return spec


def _freeze(v: Any) -> Any:
    return tuple(_freeze(x) for x in v) if isinstance(v, list) else v


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

    def flatten(self, **kwargs):
        """The fixed-length token space of this (bounded) space (``spaces.language.flatten``)."""
        from spaces.language.flatten import FlatLanguageSpace

        return FlatLanguageSpace(self, **kwargs)
