"""Optuna's suggest calls on a nasjax trial: the searcher's choice, checked against the study's space.

A study's space is declared when it is created (``nas.create_study({"lr": nas.Float(1e-4, 1, log=True),
"act": ["relu", "tanh"]}, ...)``): the searchers are compiled for it (define-and-run). Inside the objective,
``trial.suggest_float("lr", 1e-4, 1, log=True)`` is then a checked read of ``trial.params["lr"]``: the call's
arguments must be the declaration's (Optuna too refuses a second, different distribution for one name), so
an objective written for Optuna runs unchanged once its ranges are declared. A name the space does not
declare, or other arguments, is one ``ValueError`` that shows the declaration to add and the call that
matches it. Nothing here imports JAX (worker processes check their trials' calls too).
"""

from __future__ import annotations

import math
import numbers

KINDS = {"Float": "suggest_float", "Int": "suggest_int", "Categorical": "suggest_categorical"}


def _kind(decl) -> str | None:
    """``"Float"``, ``"Int"`` or ``"Categorical"`` for a declaration (a list is a categorical), else None."""
    name = type(decl).__name__
    if name in KINDS and hasattr(decl, "choices" if name == "Categorical" else "low"):
        return name
    return "Categorical" if isinstance(decl, (list, tuple)) else None


def _arguments(kind: str, decl) -> dict:
    """A declaration's suggest arguments, in the form ``check_suggest`` compares."""
    if kind == "Categorical":
        return dict(choices=list(decl.choices if hasattr(decl, "choices") else decl))
    step = getattr(decl, "step", None)
    if kind == "Int" and step is None:
        step = 1
    return dict(low=decl.low, high=decl.high, step=step, log=bool(getattr(decl, "log", False)))


def declarations(space: dict) -> dict:
    """A dict space's declarations as plain data, ``{name: (kind, arguments)}`` (kind None: not a range or a
    list), as trials carry them: they pickle to worker processes without importing ``spaces`` (or JAX)."""
    out = {}
    for name, decl in space.items():
        kind = _kind(decl)
        out[name] = (kind, _arguments(kind, decl)) if kind is not None else (None, {"declared": repr(decl)})
    return out


def _range_text(kind: str, args: dict) -> str:
    """A range's arguments as written: ``0.0001, 1, log=True`` (an Int's step of 1 left out)."""
    extra = "".join(f", {k}={args[k]!r}" for k in ("step", "log")
                    if args.get(k) not in (None, False) and not (k == "step" and kind == "Int" and args[k] == 1))
    return f"{args['low']!r}, {args['high']!r}{extra}"


def suggest_call(name: str, kind: str, args: dict) -> str:
    """The suggest call as written: ``trial.suggest_float('lr', 0.0001, 1, log=True)``."""
    if kind == "Categorical":
        return f"trial.suggest_categorical({name!r}, {list(args['choices'])!r})"
    return f"trial.{KINDS[kind]}({name!r}, {_range_text(kind, args)})"


def _declaration_text(name: str, kind: str, args: dict) -> str:
    if kind == "Categorical":
        return f"{name!r}: {list(args['choices'])!r}"
    return f"{name!r}: nas.{kind}({_range_text(kind, args)})"


def _same_number(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    real = (numbers.Real,)
    if not isinstance(a, real) or not isinstance(b, real) or isinstance(a, bool) or isinstance(b, bool):
        return False
    return float(a) == float(b) or math.isclose(float(a), float(b), rel_tol=1e-12, abs_tol=0.0)


def _same_choices(a: list, b: list) -> bool:
    return len(a) == len(b) and all(type(x) is type(y) and x == y for x, y in zip(a, b))


def matches(kind: str, args: dict, declared_kind: str, declared: dict) -> bool:
    """Whether a suggest call's arguments are the declaration's."""
    if kind != declared_kind:
        return False
    if kind == "Categorical":
        return _same_choices(list(args["choices"]), declared["choices"])
    if kind == "Int" and args.get("step") is None:
        args = {**args, "step": 1}
    return (all(_same_number(args[k], declared[k]) for k in ("low", "high", "step"))
            and bool(args["log"]) == declared["log"])  # fmt: skip


def check_suggest(declared: dict | None, params, name: str, kind: str, args: dict) -> None:
    """A one-line ``ValueError`` unless ``trial.<suggest>(name, **args)`` reads a parameter ``declared`` holds
    with the same arguments (``declared``: the study's ``declarations``, None for a ``Space``)."""
    call = suggest_call(name, kind, args)
    if not isinstance(name, str):
        raise TypeError(f"{call}: the name must be a string")
    if declared is None:
        raise ValueError(f"{call}: this study searches a Space, not declared hyperparameters; read its "
                         f"configuration as trial.params (a {type(params).__name__})")  # fmt: skip
    if name not in declared:
        raise ValueError(f"{call}: {name!r} is not in the study's space ({', '.join(map(str, declared))}); the "
                         "space is declared when the study is created (define-and-run): add "
                         f"{_declaration_text(name, kind, args)} to the space given to create_study")  # fmt: skip
    decl_kind, decl_args = declared[name]
    if decl_kind is None:
        raise ValueError(f"{call}: the study's space declares {name!r} as {decl_args['declared']:.80}; read it as "
                         f"trial.params[{name!r}]")  # fmt: skip
    if not matches(kind, args, decl_kind, decl_args):
        raise ValueError(f"{call} does not match the study's space, which declares "
                         f"{_declaration_text(name, decl_kind, decl_args)}: call "
                         f"{suggest_call(name, decl_kind, decl_args)}, or change the space given to "
                         "create_study")  # fmt: skip
