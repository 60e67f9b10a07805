"""Substitution modules and auxiliary functions (Negrinho et al. 2019, Figures 2, 13, 14, 18, 19).

Every function returns a search space as ``(inputs, outputs)``: dicts from local names to
module inputs and outputs (single-input single-output spaces use ``"in"`` and ``"out"``).
A *search-space function* is a function of no arguments returning such a pair; the
substitution modules take them (``fn``) and call them when they are substituted, so each call
creates fresh modules and hyperparameters.

- ``substitution_module(name, substitution_fn, name_to_hyperp, input_names, output_names)``:
  write a new substitution module (Figure 14): ``substitution_fn(dh)`` gets the values of its
  hyperparameters by local name and returns the subspace that replaces the module.
- ``mimo_or`` / ``siso_or``: choose one of several spaces (hyperparameter ``idx``).
- ``siso_repeat``: ``num_reps`` copies of a space in series.
- ``siso_optional``: a space or the identity (hyperparameter ``opt`` in {0, 1}).
- ``siso_split_combine``: ``num_splits`` parallel copies combined by ``combine_fn(num_splits)``.
- ``siso_residual``: ``x + fn(x)`` when the hyperparameter ``res`` is 1 (identity skip, summed).
- ``siso_sequential`` (auxiliary): connects spaces in series; ``connect_chain`` for pairs.
- ``identity``: the basic module that passes its input through (domain independent).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from spaces.language.core import BasicModule, SubstitutionModule
from spaces.language.hyperparameters import D

SpaceIO = tuple[dict, dict]
SpaceFn = Callable[[], SpaceIO]


def substitution_module(
    name: str, substitution_fn: Callable[[dict], SpaceIO], name_to_hyperp: dict[str, Any], input_names, output_names
) -> SpaceIO:
    """A substitution module (Figure 14) as ``(inputs, outputs)``."""
    return SubstitutionModule(name, substitution_fn, name_to_hyperp, list(input_names), list(output_names)).io()


def basic_module(name, compile_fn, name_to_hyperp, input_names=("in",), output_names=("out",), traced=()) -> SpaceIO:
    """A basic module as ``(inputs, outputs)``: ``compile_fn(di, dh) -> forward_fn(di) -> do``."""
    return BasicModule(name, compile_fn, name_to_hyperp, list(input_names), list(output_names), traced).io()


def _identity_compile(di, dh):
    del di, dh
    return lambda di: {"out": di["in"]}


def identity() -> SpaceIO:
    return basic_module("Identity", _identity_compile, {})


def connect_chain(first: SpaceIO, second: SpaceIO) -> None:
    """``first``'s output ``out`` feeds ``second``'s input ``in``."""
    first[1]["out"].connect(second[0]["in"])


def siso_sequential(spaces: Sequence[SpaceIO]) -> SpaceIO:
    """Single-input single-output spaces in series (an auxiliary function: connections only)."""
    spaces = list(spaces)
    if not spaces:
        raise ValueError("siso_sequential needs at least one space")
    for a, b in zip(spaces[:-1], spaces[1:]):
        connect_chain(a, b)
    return spaces[0][0], spaces[-1][1]


def mimo_or(fns: Sequence[SpaceFn], h_idx, input_names, output_names, name: str = "Or") -> SpaceIO:
    """One of the spaces ``fns[idx]`` (Figure 13, top left)."""
    fns = list(fns)

    def substitution_fn(dh):
        idx = dh["idx"]
        if not 0 <= idx < len(fns):
            raise ValueError(f"{name}: idx={idx} but there are {len(fns)} choices")
        return fns[idx]()

    return substitution_module(name, substitution_fn, {"idx": h_idx}, input_names, output_names)


def siso_or(fns: Sequence[SpaceFn], h_idx, name: str = "SISOOr") -> SpaceIO:
    return mimo_or(fns, h_idx, ["in"], ["out"], name)


def siso_repeat(fn: SpaceFn, h_num_reps, name: str = "SISORepeat") -> SpaceIO:
    """``num_reps`` fresh copies of ``fn()`` in series (Figure 13, bottom left)."""

    def substitution_fn(dh):
        n = dh["num_reps"]
        if n < 1:
            raise ValueError(f"{name}: num_reps must be >= 1, got {n}")
        return siso_sequential([fn() for _ in range(n)])

    return substitution_module(name, substitution_fn, {"num_reps": h_num_reps}, ["in"], ["out"])


def siso_optional(fn: SpaceFn, h_opt, name: str = "SISOOptional") -> SpaceIO:
    """``fn()`` when ``opt`` is truthy, else the identity."""

    def substitution_fn(dh):
        return fn() if dh["opt"] else identity()

    return substitution_module(name, substitution_fn, {"opt": h_opt}, ["in"], ["out"])


def siso_split_combine(
    fn: SpaceFn, combine_fn: Callable[[int], SpaceIO], h_num_splits, name: str = "SISOSplitCombine"
) -> SpaceIO:
    """``num_splits`` parallel copies of ``fn()`` fed by one input, joined by ``combine_fn(num_splits)``
    (a space with inputs ``in0 .. in{k-1}`` and output ``out``; Figure 13, right)."""

    def substitution_fn(dh):
        k = dh["num_splits"]
        branches = [fn() for _ in range(k)]
        c_in, c_out = combine_fn(k)
        i_in, i_out = identity()
        for j, (b_in, b_out) in enumerate(branches):
            i_out["out"].connect(b_in["in"])
            c_in[f"in{j}"].connect(b_out["out"])
        return i_in, c_out

    return substitution_module(name, substitution_fn, {"num_splits": h_num_splits}, ["in"], ["out"])


def siso_residual(fn: SpaceFn, add_fn: Callable[[int], SpaceIO], h_res, name: str = "SISOResidual") -> SpaceIO:
    """``x + fn(x)`` (``add_fn(2)`` joins them) when ``res`` is truthy, else ``fn(x)``."""

    def substitution_fn(dh):
        body_in, body_out = fn()
        if not dh["res"]:
            return body_in, body_out
        i_in, i_out = identity()
        a_in, a_out = add_fn(2)
        i_out["out"].connect(body_in["in"])
        i_out["out"].connect(a_in["in0"])
        body_out["out"].connect(a_in["in1"])
        return i_in, a_out

    return substitution_module(name, substitution_fn, {"res": h_res}, ["in"], ["out"])


def maybe_one_more(fn: SpaceFn) -> SpaceIO:
    """Figure 18: ``fn()`` or ``fn()`` followed by ``maybe_one_more(fn)``: a space without bound
    (Appendix D.1); building architectures from it works until ``max_depth`` is reached."""
    return siso_or([fn, lambda: siso_sequential([fn(), maybe_one_more(fn)])], D([0, 1]), name="MaybeOneMore")
