"""Exploring a bounded language space: every hyperparameter any architecture can have, and when.

The flattening (``spaces.language.flatten``) gives one token to each independent hyperparameter
*key* that some architecture assigns (keys: ``spaces.language.context``). Whether a key is
assigned depends on which substitutions happen, i.e. on the values of the hyperparameters of
substitution modules (Negrinho et al. 2019, Algorithm 1). ``explore(space)`` finds this out
without enumerating architectures: it builds the initial space without resolving anything and
substitutes each substitution module once per distinct value combination of its hyperparameters
(their *roots*: the independent hyperparameters they depend on), recursively. Work is the sum over
modules of their combinations, not their product.

Result (``Exploration``), all keyed by object keys:

- ``slots``: independent hyperparameter key -> values (in token order, see below);
- ``modules``: every module created in some context, with its parent substitution module and the
  context (value combination) that creates it, and the slots it references (directly or through
  dependent hyperparameters; Algorithm 2 assigns these when the module is in the graph);
- for each substitution module: its roots and a table root combination -> context.

A slot is active iff some module that references it exists; a module exists iff its parent exists
and the parent's roots select its context. Token order puts a slot after every slot its activity
depends on (so an autoregressive policy or MCTS decides the structure first), otherwise in
traversal order (Algorithms 2 and 5 at the top level).

Modules with more than ``max_combos`` combinations (a NAS-Bench cell whose topology is 26
hyperparameters) are explored with ``probes`` random combinations; they must create no
hyperparameters or substitution modules, else a clear error says how to restructure the space.
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np

from spaces.language import context
from spaces.language.core import (
    Graph,
    Module,
    SubstitutionModule,
    UnboundedSpaceError,
    check_acyclic,
    child_prefix,
)
from spaces.language.hyperparameters import Constant, DependentHyperparameter, IndependentHyperparameter


class FlatteningError(ValueError):
    """The space cannot be flattened as written; the message names the module and the fix."""


class _ExplorationGraph(Graph):
    """A graph that never resolves: exploration substitutes modules itself."""

    def resolve(self) -> None:
        return None


@dataclasses.dataclass
class ModuleInfo:
    key: str
    type_name: str
    parent: str | None  # key of the substitution module whose substitution created it
    context: int  # which of the parent's contexts creates it
    refs: tuple[str, ...]  # slot keys it references
    is_sub: bool
    roots: tuple[str, ...] = ()  # substitution modules: slot keys of the roots (combination order)
    table: np.ndarray | None = None  # int32[prod(cards of roots)]: context of each combination
    contexts: tuple[str, ...] = ()  # key prefixes of the contexts
    leaf: bool = False  # explored by probes (creates nothing the flattening needs)


@dataclasses.dataclass
class Exploration:
    slots: dict[str, list]  # slot key -> values, in token order
    slot_names: dict[str, str]  # slot key -> readable name ("Conv2D.filters")
    modules: dict[str, ModuleInfo]  # in creation (topological) order
    max_depth: int


def _roots(h) -> list[str]:
    """Keys of the independent hyperparameters ``h`` depends on (itself if independent), in order."""
    out: list[str] = []
    stack = [h]
    while stack:
        x = stack.pop()
        if isinstance(x, IndependentHyperparameter):
            if x.key not in out:
                out.append(x.key)
        elif isinstance(x, DependentHyperparameter):
            stack.extend(x.deps[k] for k in sorted(x.deps, reverse=True))
    return out


def _value(h, assignment: dict[str, object]):
    if isinstance(h, IndependentHyperparameter):
        return assignment[h.key]
    if isinstance(h, Constant):
        return h.value
    return h.compute({n: _value(d, assignment) for n, d in h.deps.items()})


def _ordered(modules: list[Module], outputs: dict) -> list[Module]:
    """``modules`` in Algorithm 5 order from ``outputs`` (within ``modules``), the rest after."""
    allowed = {id(m) for m in modules}
    order, seen = [], set()
    for s in sorted(outputs):
        m = outputs[s].module
        if id(m) in allowed and id(m) not in seen:
            seen.add(id(m))
            order.append(m)
    i = 0
    while i < len(order):
        for s in sorted(order[i].inputs):
            src = order[i].inputs[s].source
            if src is not None and id(src.module) in allowed and id(src.module) not in seen:
                seen.add(id(src.module))
                order.append(src.module)
        i += 1
    return order + [m for m in modules if id(m) not in seen]


def explore(space, max_combos: int = 4096, probes: int = 32, max_substitutions: int = 200_000) -> Exploration:
    """Explores ``space`` (a ``LanguageSpace``); see the module docstring."""
    g = _ExplorationGraph(space.max_depth)
    slots: dict[str, list] = {}
    names: dict[str, str] = {}
    infos: dict[str, ModuleInfo] = {}
    rng = np.random.default_rng(0)
    budget = [max_substitutions]

    def new_objects(start_m: int, start_h: int) -> tuple[list[Module], list]:
        return list(g.modules.values())[start_m:], list(g.hyperparameters.values())[start_h:]

    def record(mods: list[Module], outputs: dict, parent: str | None, ctx: int) -> list[SubstitutionModule]:
        subs = []
        for m in _ordered(mods, outputs):
            refs: list[str] = []
            for local in sorted(m.hyperps):
                for r in _roots(m.hyperps[local]):
                    if r not in refs:
                        refs.append(r)
                    if r not in slots:
                        slots[r] = list(g.hyperparameters[r].values)
                        direct = m.hyperps[local].key == r
                        names[r] = f"{m.type_name}.{local}" + ("" if direct else ".dep")
            is_sub = isinstance(m, SubstitutionModule)
            infos[m.key] = ModuleInfo(m.key, m.type_name, parent, ctx, tuple(refs), is_sub)
            if is_sub:
                subs.append(m)
        return subs

    def substitute(m: SubstitutionModule, dh: dict, prefix: str):
        if m.depth + 1 > g.max_depth:
            raise UnboundedSpaceError(
                f"flattening {space.name}: {m.name} nests substitutions deeper than max_depth={g.max_depth}; "
                "the space expands without bound (Appendix D.1) and has no fixed-length form: bound its recursion"
            )
        budget[0] -= 1
        if budget[0] < 0:
            raise FlatteningError(f"flattening {space.name} needs more than max_substitutions={max_substitutions}")
        n_m, n_h = len(g.modules), len(g.hyperparameters)
        with context.frame(g, prefix, m.depth + 1):
            sub_in, sub_out = m.substitution_fn(dh)
        del sub_in
        mods, hps = new_objects(n_m, n_h)
        check_acyclic([o.module for o in sub_out.values()], {id(x) for x in mods}, f"the substitution of {m.name}")
        return mods, hps, sub_out

    def expand(m: SubstitutionModule) -> list[SubstitutionModule]:
        info = infos[m.key]
        roots = _roots_of_module(m)
        cards = [len(slots[r]) for r in roots]
        total = int(np.prod(cards, dtype=np.int64)) if cards else 1
        info.roots = tuple(roots)
        if total > max_combos:
            return _probe(m, roots, cards, total)
        table = np.zeros(total, np.int32)
        prefixes: list[str] = []
        children: list[SubstitutionModule] = []
        for c, idx in enumerate(itertools.product(*[range(k) for k in cards])):
            assignment = {r: slots[r][i] for r, i in zip(roots, idx)}
            dh = {n: _value(h, assignment) for n, h in m.hyperps.items()}
            prefix = child_prefix(m.key, dh)
            if prefix not in prefixes:
                prefixes.append(prefix)
                mods, _, outs = substitute(m, dh, prefix)
                children += record(mods, outs, m.key, len(prefixes) - 1)
            table[c] = prefixes.index(prefix)
        info.table, info.contexts = table, tuple(prefixes)
        return children

    def _roots_of_module(m: Module) -> list[str]:
        out: list[str] = []
        for local in sorted(m.hyperps):
            out += [r for r in _roots(m.hyperps[local]) if r not in out]
        return out

    def _probe(m, roots, cards, total) -> list:
        own = set(roots)
        for _ in range(probes):
            assignment = {r: slots[r][int(rng.integers(k))] for r, k in zip(roots, cards)}
            dh = {n: _value(h, assignment) for n, h in m.hyperps.items()}
            mods, hps, _ = substitute(m, dh, child_prefix(m.key, dh) + "probe/")
            made = [h for h in hps if isinstance(h, IndependentHyperparameter)]
            subs = [x for x in mods if isinstance(x, SubstitutionModule)]
            outer = {r for x in mods for h in x.hyperps.values() for r in _roots(h)} - own
            if made or subs or outer:
                what = "hyperparameters" if made else "substitution modules" if subs else "outer hyperparameters"
                raise FlatteningError(
                    f"flattening {space.name}: {m.name} has {total} value combinations (> max_combos={max_combos}) and "
                    f"its substitution uses {what}; create them outside the module and pass them in (they are then "
                    "shared), or raise max_combos"
                )
        infos[m.key].leaf = True
        infos[m.key].table = np.zeros(1, np.int32)
        return []

    with context.frame(g, "", 0):
        res = space.fn()
    check_acyclic([o.module for o in res[1].values()], None, f"the search space {space.name}")
    queue = record(list(g.modules.values()), res[1], None, 0)
    while queue:
        queue = queue[1:] + expand(queue[0])
    return Exploration(slots=_token_order(slots, infos), slot_names=names, modules=infos, max_depth=space.max_depth)


def _token_order(slots: dict[str, list], infos: dict[str, ModuleInfo]) -> dict[str, list]:
    """Slots after the slots their activity depends on (roots of ancestors of referencing modules)."""
    needs: dict[str, set[str]] = {s: set() for s in slots}
    for info in infos.values():
        anc, p = set(), info.parent
        while p is not None:
            anc.update(infos[p].roots)
            p = infos[p].parent
        for s in info.refs:
            needs[s] |= anc - {s}
    order, done, pending = [], set(), list(slots)
    while pending:
        ready = [s for s in pending if needs[s] <= done]
        if not ready:
            raise FlatteningError(f"hyperparameters {pending[:3]} decide each other's presence; the space is ambiguous")
        s = ready[0]  # the first in discovery order keeps traversal order where the dependencies allow
        order.append(s)
        done.add(s)
        pending.remove(s)
    return {s: slots[s] for s in order}
