"""Searcher options: a frozen dataclass of plain values per searcher, the searcher's identity.

Each searcher declares its options as a frozen dataclass of plain values (``SearcherOptions`` and
subclasses; a subclass adds fields or changes defaults, never restates the base ones). Every value is
checked against the field's type when the dataclass is built (an ``int`` config value becomes a float
option, an integral float an int option), and a float option refuses NaN and infinities unless its field
says what they mean (``metadata={NON_FINITE: "..."}``). Any value that cannot run is one ``OptionError``
naming the option and its allowed values (``positive``, ``one_of``, ``feature_kind`` help a ``check``).
Two searchers with the same class, space and options are equal (``nas.core.contract``), and a config
entry maps one to one onto the option fields (``nas.searchers.make_searcher(name, space, **options)``).
"""

from __future__ import annotations

import dataclasses
import math
import typing
from typing import ClassVar

import numpy as np

from spaces.base import Space
from spaces.files import DataError
from spaces.names import did_you_mean


@dataclasses.dataclass(frozen=True)
class SearcherOptions:
    """Options every searcher has.

    Attributes:
      batch_size: strings asked per step (``B``).
      max_queries: the query budget of a run; the last batch is cut to it.
    """

    batch_size: int = 1
    max_queries: int = 150
    # num_init random strings start the search in whole batches, below the budget (the BO loops)
    INIT_IN_BATCHES: ClassVar[bool] = False

    def __post_init__(self):
        try:
            for f in dataclasses.fields(self):
                object.__setattr__(self, f.name, _coerce(type(self), f, getattr(self, f.name)))
            self.check()
        except (OptionError, DataError):  # a file an option names keeps its own one-line class
            raise
        except ValueError as e:  # every refusal of a value is an OptionError: one line in every command
            raise OptionError(str(e)) from None

    def check(self) -> None:
        """Raises ``ValueError`` naming the option and its allowed values; subclasses extend it."""
        positive(self, "batch_size", "max_queries")

    @classmethod
    def fit_defaults(cls, given: dict) -> dict:
        """Values for options that ``given`` leaves out whose defaults cannot run beside it (``make_options``
        applies them; an option the caller gives is never changed, and defaults that fit stay as they are):

        - a default ``batch_size`` above ``max_queries`` becomes ``max_queries``;
        - with ``INIT_IN_BATCHES``, a default ``num_init`` that is not a multiple of the batch or not below
          the budget becomes the largest multiple of the batch below ``max_queries`` (one batch at least; a
          default batch is first cut to half the budget, so that a model-based batch follows the random ones).
        """
        defaults = {f.name: f.default for f in dataclasses.fields(cls)}
        budget = given.get("max_queries", defaults["max_queries"])
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
            return {}  # refused by check()
        out = {}
        batch = given.get("batch_size", defaults["batch_size"])
        if "batch_size" not in given and batch > budget:
            batch = out["batch_size"] = budget
        init = defaults.get("num_init")
        if cls.INIT_IN_BATCHES and "num_init" not in given and isinstance(batch, int) and batch >= 1:
            if init % batch or init >= budget:
                if "batch_size" not in given:
                    batch = out["batch_size"] = min(batch, max(1, budget // 2))
                out["num_init"] = max(batch, min(init // batch * batch, (budget - 1) // batch * batch))
        return out


class OptionError(ValueError):
    """A searcher option value that cannot run (or an option the searcher does not have); the message names it."""


def positive(options, *names: str) -> None:
    """``ValueError`` unless every named option is >= 1."""
    for name in names:
        if getattr(options, name) < 1:
            raise ValueError(f"{name} must be >= 1, got {getattr(options, name)}")


def one_of(options, name: str, choices) -> None:
    """``ValueError`` unless option ``name`` is one of ``choices`` (with a did-you-mean hint)."""
    value = getattr(options, name)
    if value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}, got {value!r}.{did_you_mean(value, choices)}")


def feature_kind(space: Space, requested: str, preferred: tuple[str, ...]) -> str:
    """The encoding a searcher reads: ``requested``, or for ``"auto"`` the first of ``preferred`` (then
    ``"onehot"``) that ``space`` provides; ``ValueError`` naming the space's kinds otherwise."""
    kinds = tuple(getattr(space, "feature_kinds", ("onehot",)))
    if requested == "auto":
        requested = next(k for k in tuple(preferred) + ("onehot",) if k in kinds)
    if requested not in kinds:
        raise ValueError(
            f"encoding {requested!r} is not a feature kind of space {space.name!r} (it has {list(kinds)}); "
            "pass one of those, or 'auto'"
        )
    return requested


_PLAIN = {"int": int, "float": float, "bool": bool, "str": str}
# field metadata key: a float option for which inf or NaN means something (``dataclasses.field(metadata=...)``);
# every other float option refuses them, so a typo like eta=inf never runs and is recorded as null
NON_FINITE = "non_finite_means"


def _coerce(cls, field: dataclasses.Field, value):
    """A config value as the field's declared type (int -> float; integral float -> int), or a clear error."""
    hint = typing.get_type_hints(cls).get(field.name, field.type)
    want = _PLAIN.get(getattr(hint, "__name__", str(hint)))
    if want is None:
        return value
    if isinstance(value, np.generic):  # numpy scalars from arrays or configs
        value = value.item()
    if want is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if want is int and isinstance(value, float) and value.is_integer():
        return int(value)
    if want is int and isinstance(value, bool) or not isinstance(value, want):
        raise ValueError(f"option {field.name} must be {want.__name__}, got {value!r} ({type(value).__name__})")
    if want is float and not math.isfinite(value) and not field.metadata.get(NON_FINITE):
        raise ValueError(f"option {field.name} must be a finite number, got {value!r}")
    return value


def check_option_names(name: str, options_cls: type[SearcherOptions], options: dict) -> dict:
    """``options`` unchanged, or a ``ValueError`` naming each unknown option with a did-you-mean hint."""
    fields = [f.name for f in dataclasses.fields(options_cls)]
    bad = [k for k in options if k not in fields]
    if bad:
        hints = "".join(did_you_mean(k, fields) for k in bad)
        raise OptionError(f"searcher {name!r} has no option(s) {bad}.{hints} Its options: {fields}")
    return options
