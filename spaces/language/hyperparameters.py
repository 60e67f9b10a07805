"""Hyperparameters of the search-space language (Negrinho et al. 2019, "Towards modular and
programmable architecture search", Section 4 and Appendix A).

- ``D(values)`` (``IndependentHyperparameter``): takes one value of ``values``; search
  algorithms assign it (Algorithm 1, ``Transition``).
- ``DependentHyperparameter(fn, {"x": h, ...})``: its value is ``fn`` of the values of the
  hyperparameters it depends on, assigned as soon as they all are (Algorithm 1, lines 3-7).
  ``fn`` takes the dict ``dh`` of values by local name (``lambda dh: 2 * dh["x"]``) or, when its
  parameter names are exactly those local names, keyword arguments (``lambda x, y: x * y``,
  Figure 11).
- ``Constant(v)``: a plain value given to a module (assigned at creation, never searched).

A hyperparameter is shared by passing the same object to several modules (Figure 10). Every
object is created inside a search-space function while a graph is being built
(``spaces.language.core``); it gets a *key* from its creation context, stable across rebuilds,
which the flattening (``spaces.language.flatten``) uses to give it a token.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from spaces.language import context


class Hyperparameter:
    """Base class: a value that is unassigned until set (``assigned``, ``value``)."""

    type_name = "H"

    def __init__(self, name: str | None = None):
        self.graph, self.key = context.register(self)
        self.name = self.graph.unique_name(name or self.type_name)
        self.graph.hyperparameters[self.key] = self
        self.modules: list = []  # modules that use it (by creation)
        self.dependents: list[DependentHyperparameter] = []
        self._assigned = False
        self._value: Any = None

    @property
    def assigned(self) -> bool:
        return self._assigned

    @property
    def value(self) -> Any:
        if not self._assigned:
            raise ValueError(f"hyperparameter {self.name} has no value yet; assign the hyperparameters it needs first")
        return self._value

    def _set(self, value: Any) -> None:
        self._value, self._assigned = value, True

    def __repr__(self) -> str:
        shown = f"={self._value!r}" if self._assigned else ""
        return f"{type(self).__name__}({self.name}{shown})"


class IndependentHyperparameter(Hyperparameter):
    """A hyperparameter with a finite list of values; a search algorithm picks one (``D([1, 2, 4])``)."""

    type_name = "IH"

    def __init__(self, values: Sequence[Any], name: str | None = None):
        values = list(values)
        if not values:
            raise ValueError("an independent hyperparameter needs at least one value, got an empty list")
        if len({_hashable(v) for v in values}) != len(values):
            raise ValueError(f"the values of an independent hyperparameter must be distinct, got {values}")
        self.values = values
        super().__init__(name)

    def index_of(self, value: Any) -> int:
        """Position of ``value`` in ``values`` (JSON round trips turn tuples into lists: compared as tuples)."""
        target = _hashable(value)
        for i, v in enumerate(self.values):
            if _hashable(v) == target:
                return i
        raise ValueError(f"{value!r} is not a value of {self.name}; its values are {self.values}")

    def assign_value(self, value: Any) -> None:
        """Assigns ``value`` and resolves what it triggers (Algorithm 1)."""
        self.graph.assign(self, value)


D = IndependentHyperparameter


class DependentHyperparameter(Hyperparameter):
    """A hyperparameter computed from others: ``DependentHyperparameter(lambda dh: 2 * dh["x"], {"x": h})``."""

    type_name = "DH"

    def __init__(self, fn: Callable, name_to_hyperp: dict[str, Any], name: str | None = None):
        self.fn = fn
        self.deps = {k: as_hyperparameter(v) for k, v in sorted(name_to_hyperp.items())}
        params = _parameter_names(fn)
        self._kwargs = params is not None and params == set(self.deps)
        super().__init__(name)
        for h in self.deps.values():
            h.dependents.append(self)
        self.graph.add_dependent(self)

    def ready(self) -> bool:
        return all(h.assigned for h in self.deps.values())

    def compute(self, values: dict[str, Any]) -> Any:
        """``fn`` of the dependencies' ``values`` (by local name)."""
        return self.fn(**values) if self._kwargs else self.fn(dict(values))


class Constant(Hyperparameter):
    """A fixed value passed to a module; assigned from creation, never part of an architecture's values."""

    type_name = "C"

    def __init__(self, value: Any):
        super().__init__("C")
        self._set(value)


def as_hyperparameter(h: Any) -> Hyperparameter:
    """``h`` if it is a hyperparameter, else a ``Constant`` holding it."""
    return h if isinstance(h, Hyperparameter) else Constant(h)


def _parameter_names(fn: Callable) -> set[str] | None:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    return {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def _hashable(v: Any) -> Any:
    """A hashable stand-in for a value (lists as tuples, recursively)."""
    if isinstance(v, (list, tuple)):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _hashable(x)) for k, x in v.items()))
    return v
