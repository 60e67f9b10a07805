"""A terminal search space -> a runnable ``flax.linen`` model (Algorithm 4, ``Forward``).

Negrinho et al. 2019, Appendix C: a terminal space has only basic modules with values for all
hyperparameters; its forward pass visits the modules in topological order, each computing
``g_(m)(inputs, hyperparameter values)`` and publishing its outputs to the inputs they feed.

``compile_graph(g)`` turns the terminal graph into a ``Plan`` (the modules in topological order
with their wiring and hyperparameter values) and a ``CompiledNetwork`` (flax) that runs it:
each step calls the module's ``compile_fn(di, dh)`` inside the network's ``nn.compact`` call,
so the flax layers it creates are named after the step (``L003_Conv2D``).

``Plan.signature`` identifies the computation: module types, wiring and the values of static
hyperparameters (a basic module's type name and hyperparameter values determine what it
computes, as for every module of ``spaces.language.flax_modules``). Hyperparameters a module
declares ``traced`` are left out of it: their values are passed as the network's ``traced``
argument (``f32[T]``), so candidates with one signature share one compiled (vmapped) program.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from typing import Any

import flax.linen as nn
import jax.numpy as jnp
import numpy as np

from spaces.language.core import BasicModule, Graph, SubstitutionModule, topological_modules
from spaces.language.hyperparameters import Constant, IndependentHyperparameter, _hashable

_SCOPE: contextvars.ContextVar = contextvars.ContextVar("language_compile_scope", default=None)


@dataclasses.dataclass(frozen=True)
class CompileScope:
    name: str
    train: bool


def layer_name(suffix: str = "") -> str:
    """Name for a flax layer created by a ``compile_fn`` (unique per step of the plan)."""
    scope = _SCOPE.get()
    if scope is None:
        raise RuntimeError("layer_name() is only available while a CompiledNetwork runs a module's compile_fn")
    return scope.name + (f"_{suffix}" if suffix else "")


def is_training() -> bool:
    scope = _SCOPE.get()
    return bool(scope is not None and scope.train)


@contextlib.contextmanager
def _scope(name: str, train: bool):
    token = _SCOPE.set(CompileScope(name, train))
    try:
        yield
    finally:
        _SCOPE.reset(token)


@dataclasses.dataclass(frozen=True)
class Step:
    name: str  # flax layer name prefix
    type_name: str
    compile_fn: Any = dataclasses.field(compare=False, hash=False)
    static: tuple  # ((hp name, value), ...)
    traced: tuple  # ((hp name, slot in the traced vector), ...)
    traced_values: tuple  # ((hp name, values list or None), ...): part of the signature
    sources: tuple  # ((input name, step index or -1 for a graph input, output/graph-input name), ...)
    outputs: tuple  # output names


@dataclasses.dataclass(frozen=True)
class Plan:
    steps: tuple[Step, ...]
    inputs: tuple[str, ...]  # graph input names
    outputs: tuple[tuple[str, int, str], ...]  # (graph output name, step, output name)
    traced: tuple  # f32 value of each traced hyperparameter, in slot order

    @property
    def signature(self) -> tuple:
        """Hashable: equal for plans that compute the same function of (params, inputs, traced)."""
        steps = tuple((s.type_name, _hashable(s.static), s.traced_values, s.sources, s.outputs) for s in self.steps)
        return steps, self.inputs, self.outputs

    @property
    def traced_vector(self) -> np.ndarray:
        return np.asarray(self.traced, np.float32)


def _traced_value(h, value) -> tuple[float, Any]:
    """A traced hyperparameter as a float: numbers as themselves, other values by index in ``h.values``."""
    if isinstance(value, (bool, int, float, np.number)) and not isinstance(value, bool):
        return float(value), None
    if isinstance(h, IndependentHyperparameter):
        return float(h.index_of(value)), tuple(_hashable(v) for v in h.values)
    if isinstance(h, Constant):
        return 0.0, (_hashable(value),)
    raise TypeError(f"traced hyperparameter {h.name} has a non-numeric value {value!r} and no value list")


def plan_of(g: Graph) -> Plan:
    """The ``Plan`` of terminal graph ``g`` (a clear error if it is not terminal or not wired)."""
    mods = topological_modules(g)
    for m in mods:
        if isinstance(m, SubstitutionModule):
            raise ValueError(f"the space is not terminal: {m.name} is not substituted (assign its hyperparameters)")
        unassigned = [n for n, h in m.hyperps.items() if not h.assigned]
        if unassigned:
            raise ValueError(f"the space is not terminal: {m.name} has unassigned hyperparameters {unassigned}")
    index = {id(m): i for i, m in enumerate(mods)}
    graph_inputs = {id(ix): name for name, ix in g.inputs.items()}
    steps, traced = [], []
    for i, m in enumerate(mods):
        if not isinstance(m, BasicModule):
            raise TypeError(f"{m.name} is not a basic module and cannot be compiled")
        sources = []
        for name in sorted(m.inputs):
            ix = m.inputs[name]
            if ix.source is not None:
                sources.append((name, index[id(ix.source.module)], ix.source.name))
            elif id(ix) in graph_inputs:
                sources.append((name, -1, graph_inputs[id(ix)]))
            else:
                raise ValueError(f"input {ix} is not connected and is not an input of the search space")
        static, tr, tr_vals = [], [], []
        for name, h in m.hyperps.items():
            if name in m.traced:
                v, vals = _traced_value(h, h.value)
                tr.append((name, len(traced)))
                tr_vals.append((name, vals))
                traced.append(v)
            else:
                static.append((name, h.value))
        steps.append(
            Step(
                name=f"L{i:03d}_{m.type_name}",
                type_name=m.type_name,
                compile_fn=m.compile_fn,
                static=tuple(static),
                traced=tuple(tr),
                traced_values=tuple(tr_vals),
                sources=tuple(sources),
                outputs=tuple(sorted(m.outputs)),
            )
        )
    outs = tuple((name, index[id(ox.module)], ox.name) for name, ox in sorted(g.outputs.items()))
    return Plan(steps=tuple(steps), inputs=tuple(sorted(g.inputs)), outputs=outs, traced=tuple(traced))


class CompiledNetwork(nn.Module):
    """Runs a ``Plan``: ``apply(variables, x, traced=None, train=False)``.

    ``x`` is an array when the space has one input (else a dict by input name); the result is an
    array when it has one output (else a dict). ``traced`` defaults to the plan's own values.
    """

    plan: Plan

    @nn.compact
    def __call__(self, x, traced=None, train: bool = False):
        plan = self.plan
        inputs = x if isinstance(x, dict) else {plan.inputs[0]: x} if len(plan.inputs) == 1 else None
        if inputs is None:
            raise ValueError(f"this network has inputs {plan.inputs}: pass a dict")
        traced = jnp.asarray(plan.traced_vector) if traced is None else traced
        values: dict[tuple[int, str], Any] = {}
        for i, st in enumerate(plan.steps):
            di = {n: (inputs[src] if j < 0 else values[(j, src)]) for n, j, src in st.sources}
            dh = dict(st.static)
            for n, slot in st.traced:
                dh[n] = traced[slot]
            with _scope(st.name, train):
                do = st.compile_fn(di, dh)(di)
            for n in st.outputs:
                if n not in do:
                    raise ValueError(f"{st.name}: forward_fn returned no output {n!r} (it returned {sorted(do)})")
                values[(i, n)] = do[n]
        outs = {name: values[(j, src)] for name, j, src in plan.outputs}
        return outs[plan.outputs[0][0]] if len(outs) == 1 else outs


def compile_graph(g: Graph) -> CompiledNetwork:
    """The flax model of terminal graph ``g``."""
    return CompiledNetwork(plan_of(g))
