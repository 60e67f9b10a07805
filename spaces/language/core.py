"""Search spaces as graphs: modules, connections, transitions and ordered traversals.

Negrinho et al. 2019, "Towards modular and programmable architecture search", Sections 4 and 6:
a search space ``G`` has hyperparameters and modules; a module has named inputs, outputs and
hyperparameters (``sigma_i``, ``sigma_o``, ``sigma_h``). *Basic* modules compute (a flax layer,
``spaces.language.flax_modules``); *substitution* modules are replaced by the subspace their
substitution function returns once all their hyperparameters have values (laziness).

- ``Graph.assign(h, v)`` is ``Transition`` (Algorithm 1): assign ``v`` to independent ``h``,
  then repeat { assign every dependent hyperparameter whose dependencies have values;
  substitute every substitution module whose hyperparameters have values, rerouting its
  connections (lines 13-15) } until nothing changes.
- ``ordered_modules`` is Algorithm 5 (from the outputs backwards, local names in order);
  ``ordered_hyperparameters`` is Algorithm 2; ``unassigned_independent`` is the traversal that
  search algorithms use (Algorithm 3, lines 4-9).
- ``topological_modules`` orders a terminal graph for ``Forward`` (Algorithm 4).

Spaces that expand without bound (Appendix D.1, Figure 18) are handled with ``max_depth``: a
substitution nested deeper raises ``UnboundedSpaceError``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from spaces.language import context
from spaces.language.hyperparameters import DependentHyperparameter, Hyperparameter, IndependentHyperparameter
from spaces.language.hyperparameters import as_hyperparameter as _as_h

DEFAULT_MAX_DEPTH = 32


class UnboundedSpaceError(RecursionError):
    """A substitution nested deeper than the graph's ``max_depth`` (an infinite space, Appendix D.1)."""


class InvalidArchitecture(ValueError):
    """An assignment that gives no network (e.g. a NAS-Bench-101 cell without an input-output path);
    a substitution function raises it, and evaluation scores the architecture ``-inf``."""


class Input:
    def __init__(self, module: Module, name: str):
        self.module, self.name, self.source = module, name, None

    def connect(self, output: Output) -> None:
        output.connect(self)

    def __repr__(self) -> str:
        return f"{self.module.name}.{self.name}"


class Output:
    def __init__(self, module: Module, name: str):
        self.module, self.name, self.targets = module, name, []

    def connect(self, inp: Input) -> None:
        """Feeds this output to ``inp`` (an input takes one output; an output feeds many inputs)."""
        if not isinstance(inp, Input):
            raise TypeError(f"{self} can only connect to a module input, got {type(inp).__name__}")
        if inp.source is not None:
            raise ValueError(f"{inp} is already connected to {inp.source}; an input takes one output")
        inp.source = self
        self.targets.append(inp)

    def __repr__(self) -> str:
        return f"{self.module.name}.{self.name}"


class Module:
    """A module: named inputs, outputs and hyperparameters (plain values become constants)."""

    def __init__(self, name: str, name_to_hyperp: dict[str, Any], input_names, output_names):
        frame = context.current()
        self.graph, self.key = context.register(self)
        self.type_name, self.name, self.depth = name, frame.graph.unique_name(name), frame.depth
        self.inputs = {n: Input(self, n) for n in input_names}
        self.outputs = {n: Output(self, n) for n in output_names}
        self.hyperps = {n: _as_h(h) for n, h in sorted(name_to_hyperp.items())}
        for h in self.hyperps.values():
            if h.graph is not self.graph:
                raise ValueError(f"{self.name}: hyperparameter {h.name} belongs to another search space")
            h.modules.append(self)
        self.graph.add_module(self)

    def io(self) -> tuple[dict[str, Input], dict[str, Output]]:
        return dict(self.inputs), dict(self.outputs)

    def hyperp_values(self) -> dict[str, Any]:
        return {n: h.value for n, h in self.hyperps.items()}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name})"


class BasicModule(Module):
    """A module that computes: ``compile_fn(di, dh) -> forward_fn(di) -> do`` (Figure 12, Appendix E.1).

    ``traced`` names hyperparameters whose values reach ``compile_fn`` as arrays (a dropout rate,
    an activation index) so that candidates differing only in them share one compiled program.
    """

    def __init__(self, name, compile_fn: Callable, name_to_hyperp, input_names, output_names, traced=()):
        super().__init__(name, name_to_hyperp, input_names, output_names)
        self.compile_fn = compile_fn
        self.traced = tuple(traced)
        unknown = [t for t in self.traced if t not in self.hyperps]
        if unknown:
            raise ValueError(f"{self.name}: traced names {unknown} are not hyperparameters of the module")


class SubstitutionModule(Module):
    """A module replaced by ``substitution_fn(dh) -> (inputs, outputs)`` once its hyperparameters have values."""

    def __init__(self, name, substitution_fn: Callable, name_to_hyperp, input_names, output_names):
        self.substitution_fn = substitution_fn
        super().__init__(name, name_to_hyperp, input_names, output_names)
        self.graph.add_substitution(self)

    def ready(self) -> bool:
        return all(h.assigned for h in self.hyperps.values())


class Graph:
    """A search space ``G`` (its live modules and pending work) with unconnected inputs/outputs."""

    def __init__(self, max_depth: int = DEFAULT_MAX_DEPTH):
        self.max_depth = max_depth
        self.modules: dict[int, Module] = {}
        self.pending_subs: dict[int, SubstitutionModule] = {}
        self.pending_deps: dict[int, DependentHyperparameter] = {}
        self.inputs: dict[str, Input] = {}
        self.outputs: dict[str, Output] = {}
        self.substituted: list[tuple[SubstitutionModule, dict]] = []  # (module, dh) in substitution order
        self.hyperparameters: dict[str, Hyperparameter] = {}  # every one created, by key
        self._names: dict[str, int] = {}

    @classmethod
    def build(cls, fn: Callable[[], tuple[dict, dict]], max_depth: int = DEFAULT_MAX_DEPTH) -> Graph:
        """Calls the search-space function ``fn() -> (inputs, outputs)`` and resolves what it can."""
        g = cls(max_depth)
        with context.frame(g, "", 0):
            res = fn()
        if not (isinstance(res, tuple) and len(res) == 2 and all(isinstance(d, dict) for d in res)):
            raise TypeError(f"a search-space function returns (inputs dict, outputs dict), got {type(res).__name__}")
        g.inputs, g.outputs = dict(res[0]), dict(res[1])
        if not g.outputs:
            raise ValueError("a search space needs at least one output")
        check_acyclic([g.outputs[s].module for s in sorted(g.outputs)], None, "the search space")
        g.resolve()
        return g

    # -- bookkeeping (called by constructors) -------------------------------------------
    def unique_name(self, base: str) -> str:
        self._names[base] = self._names.get(base, 0) + 1
        return f"{base}-{self._names[base]}"

    def add_module(self, m: Module) -> None:
        self.modules[id(m)] = m

    def add_substitution(self, m: SubstitutionModule) -> None:
        self.pending_subs[id(m)] = m

    def add_dependent(self, h: DependentHyperparameter) -> None:
        self.pending_deps[id(h)] = h

    # -- Algorithm 1 ------------------------------------------------------------------------
    def assign(self, h: IndependentHyperparameter, value: Any) -> None:
        """``Transition(G, h, v)``: assigns and resolves dependent hyperparameters and substitutions."""
        if not isinstance(h, IndependentHyperparameter):
            raise TypeError(f"only independent hyperparameters are assigned, got {h!r}")
        if h.graph is not self:
            raise ValueError(f"{h.name} belongs to another search space")
        if h.assigned:
            raise ValueError(f"{h.name} already has value {h.value!r}")
        h._set(h.values[h.index_of(value)])
        self.resolve()

    def resolve(self) -> None:
        changed = True
        while changed:
            changed = False
            for key, d in list(self.pending_deps.items()):
                if d.ready():
                    d._set(d.compute({n: x.value for n, x in d.deps.items()}))
                    del self.pending_deps[key]
                    changed = True
            for key, m in list(self.pending_subs.items()):
                if key in self.pending_subs and m.ready():
                    self._substitute(m)
                    changed = True

    def _substitute(self, m: SubstitutionModule) -> None:
        dh = m.hyperp_values()
        if m.depth + 1 > self.max_depth:
            raise UnboundedSpaceError(
                f"substituting {m.name} nests substitutions deeper than max_depth={self.max_depth}: the space may "
                "expand without bound (Appendix D.1); bound its recursion or pass a larger max_depth"
            )
        del self.pending_subs[id(m)]
        del self.modules[id(m)]
        self.substituted.append((m, dh))
        before = set(self.modules)
        with context.frame(self, child_prefix(m.key, dh), m.depth + 1):
            res = m.substitution_fn(dh)
        if not (isinstance(res, tuple) and len(res) == 2):
            raise TypeError(f"substitution function of {m.name} must return (inputs, outputs)")
        sub_in, sub_out = res
        missing = [n for n in m.inputs if n not in sub_in] + [n for n in m.outputs if n not in sub_out]
        if missing:
            raise ValueError(f"substitution of {m.name} returned no input/output named {missing}")
        # the space around m is acyclic (checked when built), so a cycle could only lie inside m's subspace
        check_acyclic([o.module for o in sub_out.values()], set(self.modules) - before, f"the substitution of {m.name}")
        for n, ix in m.inputs.items():  # Algorithm 1, line 13: (o, i) -> (o, sigma_i(i))
            if ix.source is not None:
                src = ix.source
                src.targets.remove(ix)
                ix.source = None
                src.connect(sub_in[n])
        for n, ox in m.outputs.items():  # line 14: (o, i) -> (sigma_o(o), i)
            for ix in list(ox.targets):
                ix.source = None
                sub_out[n].connect(ix)
            ox.targets = []
        self.inputs = {k: (sub_in[v.name] if v.module is m else v) for k, v in self.inputs.items()}
        self.outputs = {k: (sub_out[v.name] if v.module is m else v) for k, v in self.outputs.items()}

    # -- traversals ---------------------------------------------------------------------------
    def is_terminal(self) -> bool:
        """No unassigned independent hyperparameter is reachable and no substitution is left."""
        hs = ordered_hyperparameters(self)
        mods = ordered_modules(self)
        return all(h.assigned for h in hs) and not any(isinstance(m, SubstitutionModule) for m in mods)


def child_prefix(key: str, dh: dict[str, Any]) -> str:
    """Key prefix of the objects created by substituting object ``key`` with values ``dh``."""
    return f"{key}[{','.join(f'{k}={v!r}' for k, v in sorted(dh.items()))}]/"


def ordered_modules(g: Graph) -> list[Module]:
    """Algorithm 5: modules reachable backwards from the outputs, in a unique order."""
    order: list[Module] = []
    seen: set[int] = set()
    for s in sorted(g.outputs):
        m = g.outputs[s].module
        if id(m) not in seen:
            seen.add(id(m))
            order.append(m)
    i = 0
    while i < len(order):
        m = order[i]
        for s in sorted(m.inputs):
            src = m.inputs[s].source
            if src is not None and id(src.module) not in seen:
                seen.add(id(src.module))
                order.append(src.module)
        i += 1
    return order


def ordered_hyperparameters(g: Graph) -> list[Hyperparameter]:
    """Algorithm 2: the modules' hyperparameters by local name, then the dependencies of dependent ones."""
    hs: list[Hyperparameter] = []
    seen: set[int] = set()

    def add(h):
        if id(h) not in seen:
            seen.add(id(h))
            hs.append(h)

    for m in ordered_modules(g):
        for s in sorted(m.hyperps):
            add(m.hyperps[s])
    i = 0
    while i < len(hs):
        h = hs[i]
        if isinstance(h, DependentHyperparameter):
            for s in sorted(h.deps):
                add(h.deps[s])
        i += 1
    return hs


def unassigned_now(g: Graph) -> list[IndependentHyperparameter]:
    """The unassigned independent hyperparameters of ``g`` as it is now, in traversal order (one pass)."""
    return [h for h in ordered_hyperparameters(g) if isinstance(h, IndependentHyperparameter) and not h.assigned]


def unassigned_independent(g: Graph) -> Iterator[IndependentHyperparameter]:
    """Yields unassigned independent hyperparameters in traversal order until ``g`` is terminal.

    Algorithm 3, lines 4-9: a pass over ``OrderedHyperps``; the caller assigns each yielded one
    (which may create new ones, found by the next pass).
    """
    while True:
        todo = unassigned_now(g)
        if not todo:
            return
        for h in todo:
            if not h.assigned:
                yield h
        if not any(h.assigned for h in todo):
            raise RuntimeError("unassigned_independent: the caller must assign each yielded hyperparameter")


def topological_modules(g: Graph) -> list[Module]:
    """Modules reachable from the outputs, each after the modules feeding it (Algorithm 4, line 1)."""
    return _topological([g.outputs[s].module for s in sorted(g.outputs)])


def _topological(starts: list[Module], within: set[int] | None = None) -> list[Module]:
    """Modules reachable backwards from ``starts`` (only those in ``within``, when given), each after the
    modules feeding it; a ``ValueError`` naming a module on a cycle."""
    order: list[Module] = []
    state: dict[int, int] = {}  # 1: on the stack, 2: done
    for start in starts:
        if within is not None and id(start) not in within:
            continue
        stack = [(start, False)]
        while stack:
            m, expanded = stack.pop()
            if expanded:
                state[id(m)] = 2
                order.append(m)
                continue
            if state.get(id(m)) == 2:
                continue
            if state.get(id(m)) == 1:
                raise ValueError(f"the graph has a cycle through {m.name}")
            state[id(m)] = 1
            stack.append((m, True))
            for name in sorted(m.inputs, reverse=True):
                src = m.inputs[name].source
                if src is not None and within is not None and id(src.module) not in within:
                    continue
                if src is not None and state.get(id(src.module)) != 2:
                    if state.get(id(src.module)) == 1:
                        raise ValueError(f"the graph has a cycle through {src.module.name}")
                    stack.append((src.module, False))
    return order


def check_acyclic(starts: list[Module], within: set[int] | None, what: str) -> None:
    """A ``ValueError`` when the modules feeding ``starts`` (in ``within``) form a cycle: a network is a DAG."""
    try:
        _topological(starts, within)
    except ValueError as e:
        raise ValueError(
            f"{what} is not a directed acyclic graph: {e}; connect no module's output to an input it feeds"
        ) from None


def build(fn: Callable[[], tuple[dict, dict]], max_depth: int = DEFAULT_MAX_DEPTH) -> Graph:
    """The search space of ``fn`` (a function returning ``(inputs, outputs)``)."""
    return Graph.build(fn, max_depth)
