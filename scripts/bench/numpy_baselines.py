"""Plain-numpy reference implementations of random search and regularized evolution on a table.

Independent of the JAX searchers (no shared code): ``scripts/bench/bench_runner.py``
times them side by side with the compiled many-seed runner and compares their
results, so a throughput claim is measured against the same work done the
obvious way. Both work on a dense product-space table: ``scores[id]`` is the
searched score of the string whose mixed-radix index (``numpy.ravel_multi_index``
over ``cardinalities``) is ``id``.

- Random search without repeats (Li & Talwalkar, 2019): ``num_queries`` distinct
  strings, uniform.
- Regularized (aging) evolution (Real et al., 2019, Algorithm 1): ``population``
  random strings, then each query mutates the best of ``tournament`` uniform
  draws from the population (one token changed to a different value), skipping
  strings already queried; the child replaces the oldest member.
"""

from __future__ import annotations

import collections

import numpy as np


def random_search(scores: np.ndarray, num_seeds: int, num_queries: int, seed: int = 0) -> np.ndarray:
    """f64[S, Q] best-so-far score of each seed."""
    rng = np.random.default_rng(seed)
    out = np.empty((num_seeds, num_queries))
    for s in range(num_seeds):
        ids = rng.choice(scores.shape[0], size=num_queries, replace=False)
        out[s] = np.maximum.accumulate(scores[ids])
    return out


def regularized_evolution(
    scores: np.ndarray,
    cardinalities: tuple[int, ...],
    num_seeds: int,
    num_queries: int,
    population: int = 30,
    tournament: int = 10,
    seed: int = 0,
) -> np.ndarray:
    """f64[S, Q] best-so-far score of each seed."""
    rng = np.random.default_rng(seed)
    card = np.asarray(cardinalities)
    out = np.empty((num_seeds, num_queries))
    for s in range(num_seeds):
        seen: set[int] = set()
        pop: collections.deque = collections.deque()
        best = -np.inf
        for q in range(num_queries):
            if q < population:
                while True:
                    tokens = rng.integers(0, card)
                    sid = int(np.ravel_multi_index(tokens, card))
                    if sid not in seen:
                        break
            else:
                members = [pop[i] for i in rng.integers(0, len(pop), tournament)]
                parent = max(members, key=lambda m: m[1])[0]
                while True:
                    tokens = parent.copy()
                    pos = rng.integers(0, len(card))
                    tokens[pos] = (tokens[pos] + rng.integers(1, card[pos])) % card[pos]
                    sid = int(np.ravel_multi_index(tokens, card))
                    if sid not in seen:
                        break
            seen.add(sid)
            score = float(scores[sid])
            pop.append((tokens, score))
            if len(pop) > population:
                pop.popleft()
            best = max(best, score)
            out[s, q] = best
    return out
