"""A study's space as Optuna's distributions, read from the space's declaration (``spaces.declaration``).

What Optuna's plots and optuna-dashboard show for a hyperparameter depends on its distribution, so each
one is given the distribution a user would have written with Optuna's ``suggest_*``:

- ``Float(low, high, log=, step=)`` -> ``FloatDistribution(low, high, log=, step=)``, and ``Int`` ->
  ``IntDistribution``: the declared range, also where the searcher walks it as a grid (``spaces.params``:
  every value it proposes lies inside the range and on its ``step``). Optuna has no log range with a
  step: there the distribution keeps ``log`` and drops the step (for ``Int``: ``step=1``).
- a list of values, ``Categorical(choices)``: ``CategoricalDistribution(choices)``.
- a ``CategoricalSpace``: one categorical per hyperparameter. An ``HPOSpace``: an ordinal hyperparameter
  whose values are all numbers is a range over them (``IntDistribution`` for integers, else
  ``FloatDistribution``, ``log=True`` where the values are positive and evenly spaced on a log scale), any
  other a categorical.

Optuna's categorical choices are ``None``, booleans, numbers and strings: any other value (a tuple, a
list) becomes its ``repr`` in the mirrored trial, so it still shows and counts as a choice. A
hyperparameter that is not active in a trial (``when=``) is left out of that trial, as Optuna leaves out
a parameter that ``suggest_*`` never asked for.
"""

from __future__ import annotations

import math
from typing import Any

from spaces.declaration import from_plain
from spaces.files import MissingPackageError

try:
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
except ImportError as e:  # optional dependency
    raise MissingPackageError("a study mirrored into Optuna needs Optuna: pip install optuna") from e

PLAIN_CHOICES = (type(None), bool, int, float, str)  # what Optuna's CategoricalDistribution takes


def _choice(value: Any) -> Any:
    return value if isinstance(value, PLAIN_CHOICES) else repr(value)


def _range(decl: dict) -> Any:
    low, high, log, step = decl.get("low"), decl.get("high"), bool(decl.get("log")), decl.get("step")
    if decl.get("type") == "int":
        return IntDistribution(int(low), int(high), log=log,
                                                    step=1 if log or step is None else int(step))  # fmt: skip
    return FloatDistribution(float(low), float(high), log=log, step=None if log else step)


def _numbers(values: list) -> bool:
    return bool(values) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def _evenly_logged(values: list) -> bool:
    if len(values) < 3 or min(values) <= 0:
        return False
    logs = sorted(math.log(v) for v in values)
    gaps = [b - a for a, b in zip(logs, logs[1:])]
    linear = sorted(values)
    lin_gaps = [b - a for a, b in zip(linear, linear[1:])]
    spread = (max(gaps) - min(gaps)) / max(gaps)
    return spread < 0.25 and (max(lin_gaps) - min(lin_gaps)) / max(lin_gaps) > 0.25


def _ordinal(values: list) -> Any:
    log = _evenly_logged(values)
    if all(isinstance(v, int) for v in values):
        return IntDistribution(min(values), max(values), log=log)
    return FloatDistribution(float(min(values)), float(max(values)), log=log)


def _categorical(values: list) -> Any:
    choices = []
    for v in from_plain(values):  # a declaration's values as JSON data: a tuple back as a tuple
        c = _choice(v)
        if c not in choices:
            choices.append(c)
    return CategoricalDistribution(choices)


def _parameter(decl: Any) -> Any:
    if isinstance(decl, list):
        return _categorical(decl)
    kind = decl.get("type") if isinstance(decl, dict) else None
    if kind in ("float", "int"):
        return _range(decl)
    if kind == "categorical":
        return _categorical(list(decl.get("choices", [])))
    raise ValueError(f"no Optuna distribution for the declaration {decl!r:.80}")


def distributions(space_declaration: dict) -> dict[str, Any]:
    """``{name: optuna distribution}`` for the space whose declaration (``spaces.declaration.declaration``)
    is ``space_declaration`` (module doc)."""
    kind = space_declaration.get("type")
    if not isinstance(kind, str):  # a dict of hyperparameters
        return {name: _parameter(decl) for name, decl in space_declaration.items()}
    if kind == "CategoricalSpace":
        return {name: _categorical(list(values)) for name, values in space_declaration["values"].items()}
    if kind == "HPOSpace":
        out = {}
        for h in space_declaration["hyperparameters"]:
            values = list(h["values"])
            ordinal = h.get("ordinal") and _numbers(values) and len(values) > 1
            out[h["name"]] = _ordinal(values) if ordinal else _categorical(values)
        return out
    raise ValueError(f"no Optuna distributions for a space declared as {kind!r}")


def token_distributions(space) -> dict[str, Any]:
    """For a space with no declaration (a NAS cell: its methods are code): one categorical per token over the
    token's choice numbers, so a trial shows as the tokens the searcher chose."""
    return {name: CategoricalDistribution(list(range(int(n))))
            for name, n in zip(space.token_names, space.cardinalities)}  # fmt: skip


def trial_params(params: Any, tokens, dists: dict[str, Any]) -> dict[str, Any]:
    """The values of a trial's ``params`` (``{name: value}``, or for a tokens space its ``tokens``) that
    ``dists`` name, as Optuna's external values (a choice Optuna cannot hold as its ``repr``)."""
    if not isinstance(params, dict) or not set(params) <= set(dists):
        params = dict(zip(dists, (int(t) for t in tokens)))
    out = {}
    for name, value in params.items():
        if hasattr(value, "item"):  # a numpy scalar
            value = value.item()
        out[name] = _choice(value) if isinstance(dists[name], CategoricalDistribution) else value
    return out

