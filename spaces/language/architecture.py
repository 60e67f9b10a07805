"""An architecture of a language space: the values assigned along the traversal, as JSON.

An architecture is the ordered sequence of values assigned to independent hyperparameters
during the traversal (Negrinho et al. 2019, Algorithm 3): ``Architecture(values, space)``. It
serializes to JSON (``{"space": name, "values": [...]}``); ``LanguageSpace.replay`` and
``FlatLanguageSpace.from_spec`` read it back, and refuse an architecture of another space.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

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
