"""A space and its values as plain data: JSON that rebuilds them exactly, and never code.

A study file (``nas.host.storage``) keeps the space a Study searches as its declaration, so that
opening a file someone sent you reads numbers and strings and runs nothing:

- a dict given to the Study is written as it is: ``{"lr": {"type": "float", "low": 1e-05, "high": 0.1,
  "log": true, "step": null, "num": null, "when": null}, "opt": ["sgd", "adam"]}`` (``spaces.params``:
  ``Float`` and ``Int`` as ``"float"``/``"int"`` with their arguments, ``Categorical`` as
  ``{"type": "categorical", "choices": [...], "when": ...}``, a list of values as the list);
- a ``CategoricalSpace`` (without ``canonical=``) as ``{"type": "CategoricalSpace", "name": ...,
  "values": {name: [values]}}``, an ``HPOSpace`` as ``{"type": "HPOSpace", ...}`` with its hyperparameters
  (values, ordinal, condition, doc). Other spaces hold code (their own methods), so they have no
  declaration: ``declaration`` says what to give instead. (A hyperparameter's declaration is never a
  string, so ``"type"`` naming a string tells a space from a dict of hyperparameters.)

Values (``plain``/``from_plain``): numbers, strings, booleans, None, lists and dicts with string keys
are JSON's own; a tuple is written ``{"__tuple__": [...]}`` and comes back a tuple; numpy scalars are
written as the Python number they hold. Anything else is refused with a line naming where it sits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from spaces.base import CategoricalSpace, Space
from spaces.hpo import HPOSpace, Hyperparameter, _when
from spaces.params import Categorical, Float, Int

TUPLE = "__tuple__"  # the key of a tuple's JSON form
_RANGES = {"float": Float, "int": Int}


def plain(value: Any, where: str) -> Any:
    """``value`` as JSON data (module doc); ``ValueError`` naming ``where`` for anything that is not data."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or type(value) in (bool, int, float, str):
        return value
    if isinstance(value, tuple):
        return {TUPLE: [plain(v, where) for v in value]}
    if isinstance(value, list):
        return [plain(v, where) for v in value]
    if isinstance(value, dict):
        bad = [k for k in value if not isinstance(k, str)]
        if bad or set(value) == {TUPLE}:
            key = repr(bad[0]) if bad else f"only {TUPLE!r}"
            raise ValueError(f"{where}: a dict with the key {key} has no JSON form; give string keys")
        return {k: plain(v, where) for k, v in value.items()}
    raise ValueError(f"{where}: {type(value).__name__} {value!r:.60} is not plain data (numbers, strings, booleans, "
                     "None, and lists, tuples or dicts of them)")  # fmt: skip


def from_plain(data: Any) -> Any:
    """The value whose JSON form (``plain``) is ``data``."""
    if isinstance(data, list):
        return [from_plain(v) for v in data]
    if isinstance(data, dict):
        if set(data) == {TUPLE}:
            if not isinstance(data[TUPLE], list):
                raise ValueError(f"{TUPLE} must hold a list, got {data[TUPLE]!r:.60}")
            return tuple(from_plain(v) for v in data[TUPLE])
        return {k: from_plain(v) for k, v in data.items()}
    return data


def _when_data(when: tuple, where: str) -> dict | None:
    return {parent: [plain(v, where) for v in allowed] for parent, allowed in when} or None


def _parameter(decl: Any, where: str) -> Any:
    if isinstance(decl, (Float, Int)):
        return {"type": "float" if isinstance(decl, Float) else "int", "low": plain(decl.low, where),
                "high": plain(decl.high, where), "log": bool(decl.log), "step": plain(decl.step, where),
                "num": plain(decl.num, where), "when": _when_data(decl.when, where)}  # fmt: skip
    if isinstance(decl, Categorical):
        return {"type": "categorical", "choices": [plain(c, where) for c in decl.choices],
                "when": _when_data(decl.when, where)}  # fmt: skip
    if isinstance(decl, Sequence) and not isinstance(decl, (str, bytes)):
        return [plain(v, where) for v in decl]
    raise ValueError(f"{where}: give Float(...), Int(...), Categorical(...) or a list of values, got {decl!r:.60}")


def declaration(space: Space | Mapping[str, Any]) -> dict:
    """The JSON data that rebuilds ``space`` (module doc); ``ValueError`` for a space that has none."""
    names = space if isinstance(space, Mapping) else getattr(space, "token_names", ())
    bad = [name for name in names if not isinstance(name, str)]
    if bad:  # JSON keys are strings: 1 would come back "1"
        raise ValueError(f"space: hyperparameter names must be strings to be kept as data, got {bad[0]!r}")
    if isinstance(space, Mapping):
        return {name: _parameter(decl, f"space: hyperparameter {name!r}") for name, decl in space.items()}
    if type(space) is CategoricalSpace and space.plain_product:  # canonical= is a function: not data
        return {"type": "CategoricalSpace", "name": space.name,
                "values": {k: [plain(v, f"space: hyperparameter {k!r}") for v in vals]
                           for k, vals in space.values.items()}}  # fmt: skip
    if type(space) is HPOSpace:
        return {"type": "HPOSpace", "name": space.name, "order_aware": space.order_aware,
                "mutation_scale": space.mutation_scale, "hyperparameters": [
                    {"name": h.name, "values": [plain(v, f"space: hyperparameter {h.name!r}") for v in h.values],
                     "ordinal": h.ordinal, "when": _when_data(h.when, f"space: hyperparameter {h.name!r}"),
                     "doc": h.doc} for h in space.hyperparameters]}  # fmt: skip
    raise ValueError(f"space: a {type(space).__name__} has no declaration as data (its methods are code); give the "
                     "Study a dict {name: [values] | Float | Int | Categorical}, a CategoricalSpace or an HPOSpace")


def _when_of(data: Any) -> dict | None:
    if data is not None and not isinstance(data, dict):
        raise ValueError(f"when must be a dict {{parent: [values]}} or null, got {data!r:.60}")
    return None if data is None else {parent: from_plain(allowed) for parent, allowed in data.items()}


def _parameter_of(data: Any) -> Any:
    if isinstance(data, list):
        return from_plain(data)
    kind = data.get("type") if isinstance(data, dict) else None
    if kind in _RANGES:
        return _RANGES[kind](data.get("low"), data.get("high"), log=data.get("log", False), step=data.get("step"),
                             num=data.get("num"), when=_when_of(data.get("when")))  # fmt: skip
    if kind == "categorical" and isinstance(data.get("choices"), list):
        return Categorical(from_plain(data["choices"]), when=_when_of(data.get("when")))
    raise ValueError(f"{data!r:.80} is no declaration (a list of values, or "
                     '{"type": "float" | "int" | "categorical", ...})')  # fmt: skip


def _hyperparameter_of(data: Any) -> Hyperparameter:
    if not isinstance(data, dict) or not isinstance(data.get("name"), str) or not isinstance(data.get("values"), list):
        raise ValueError(f"an HPOSpace hyperparameter is {{'name': ..., 'values': [...], ...}}, got {data!r:.80}")
    return Hyperparameter(data["name"], tuple(from_plain(data["values"])), bool(data.get("ordinal")),
                          _when(_when_of(data.get("when"))), str(data.get("doc", "")))  # fmt: skip


def from_declaration(data: Any) -> Space | dict[str, Any]:
    """What ``declaration`` wrote ``data`` from: a dict of hyperparameters, or the space; ``ValueError`` else."""
    if not isinstance(data, dict) or not data:
        raise ValueError(f"space: a declaration is a non-empty JSON object, got {data!r:.80}")
    kind = data.get("type")
    if not isinstance(kind, str):  # a dict of hyperparameters (a declaration is never a string)
        out = {}
        for name, decl in data.items():
            try:
                out[name] = _parameter_of(decl)
            except ValueError as e:  # a range's own check: say which hyperparameter
                raise ValueError(f"space: hyperparameter {name!r}: {e}") from None
        return out
    if kind == "CategoricalSpace" and isinstance(data.get("values"), dict):
        return CategoricalSpace(str(data.get("name")), from_plain(data["values"]))
    if kind == "HPOSpace" and isinstance(data.get("hyperparameters"), list):
        return HPOSpace(str(data.get("name")), [_hyperparameter_of(h) for h in data["hyperparameters"]],
                        order_aware=bool(data.get("order_aware")),
                        mutation_scale=data.get("mutation_scale"))  # fmt: skip
    raise ValueError(f"space: {kind!r} is no space this version declares (CategoricalSpace, HPOSpace, or a dict of "
                     "hyperparameters)")
