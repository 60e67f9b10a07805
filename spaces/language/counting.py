"""The number of distinct architectures of a finite space, by exhaustive traversal.

Negrinho et al. 2019 state sizes of spaces written in the language: 25,008 for Figure 4,
27 for Figure 10, 243 for Figure 11. An architecture is a terminal space, i.e. the values of the
independent hyperparameters assigned on the way to it; the final graph depends on those values
and not on the order they were assigned in, so the count may choose its order:

1. While the graph has a substitution module reachable from the outputs, take the first (in
   traversal order, Algorithm 2) unassigned independent hyperparameter it depends on (directly
   or through dependent hyperparameters) and branch on each of its values: each branch rebuilds
   the space and replays the assignments so far (``search_space_fn`` is called afresh, as in the
   paper's searchers).
2. Without pending substitutions no module or hyperparameter is created any more (Section 6.2:
   ``M_s(G) = {}`` implies ``M(G') = M(G)``), so the remaining subtree is counted in closed form,
   the product of the cardinalities of the unassigned independent hyperparameters, instead of
   being enumerated. This is what keeps Figure 4 at 6 replays instead of 25,008 leaves.

Distinct architectures are distinct assignments; two of them may still compute the same function
(e.g. ``D([1, 1.0])``). Spaces without bound raise ``UnboundedSpaceError`` (the depth limit);
``max_branches`` bounds the replays with a clear error.
"""

from __future__ import annotations

from spaces.language.core import (
    DependentHyperparameter,
    Graph,
    IndependentHyperparameter,
    SubstitutionModule,
    ordered_hyperparameters,
    ordered_modules,
)


class CountingLimitError(RuntimeError):
    """The count needs more replays than ``max_branches``."""


def _roots(h) -> list:
    """Unassigned independent hyperparameters ``h`` depends on (itself if independent)."""
    out, stack, seen = [], [h], set()
    while stack:
        x = stack.pop()
        if id(x) in seen or x.assigned:
            continue
        seen.add(id(x))
        if isinstance(x, IndependentHyperparameter):
            out.append(x)
        elif isinstance(x, DependentHyperparameter):
            stack.extend(x.deps[k] for k in sorted(x.deps, reverse=True))
    return out


def next_structural(g: Graph) -> IndependentHyperparameter | None:
    """First unassigned independent hyperparameter (traversal order) that a pending substitution needs."""
    structural: set[int] = set()
    pending = [m for m in ordered_modules(g) if isinstance(m, SubstitutionModule)]
    for m in pending:
        for h in m.hyperps.values():
            structural.update(id(r) for r in _roots(h))
    if pending and not structural:
        raise RuntimeError(f"{pending[0].name} waits for hyperparameters that can never be assigned")
    for h in ordered_hyperparameters(g):
        if id(h) in structural:
            return h
    return None


def free_product(g: Graph) -> int:
    """Product of the cardinalities of the unassigned independent hyperparameters reachable in ``g``."""
    n = 1
    for h in ordered_hyperparameters(g):
        if isinstance(h, IndependentHyperparameter) and not h.assigned:
            n *= len(h.values)
    return n


def count_architectures(space, max_branches: int = 100_000) -> int:
    """Number of distinct terminal architectures of ``space`` (a ``LanguageSpace``)."""
    replays = 0

    def rebuild(prefix: list[tuple[str, object]]) -> Graph:
        nonlocal replays
        replays += 1
        if replays > max_branches:
            raise CountingLimitError(
                f"counting {space.name} needs more than max_branches={max_branches} replays; "
                "pass a larger max_branches or count a smaller space"
            )
        g = space.build()
        for key, v in prefix:
            g.hyperparameters[key].assign_value(v)
        return g

    def count(prefix, g: Graph) -> int:
        h = next_structural(g)
        if h is None:
            return free_product(g)
        total = 0
        for i, v in enumerate(h.values):
            branch = g if i == 0 else rebuild(prefix)
            hb = branch.hyperparameters[h.key]
            hb.assign_value(v)
            total += count(prefix + [(h.key, v)], branch)
        return total

    return count([], rebuild([]))
