"""Order-aware operators on ordinal tokens: mutation, neighbours and a numeric encoding.

A numeric hyperparameter is one categorical token over an ordered grid (``spaces.hpo``); its
index order is its value order. The space contract's default operators ignore that order (a
mutation draws any other value, a neighbour is any other value, one-hot features put every value
at the same distance). These pure functions use it; ``HPOSpace(..., order_aware=True)`` switches
them on (the tuner declarations of ``spaces.params`` always do; the benchmark spaces keep the
default operators, so their documented numbers stay as they are).

Every ordinal token lives on the unit axis ``u = index / (D - 1)`` (``D`` grid values): a grid
declared linear or logarithmic is uniform on its own scale, so ``u`` is the value's position on
that scale.

- Mutation: the chosen token (uniform over the active tokens that have another value) moves to
  value ``v != i`` with probability proportional to ``exp(-(u_v - u_i)^2 / (2 sigma^2))``, a
  Gaussian step on the unit axis, discretized to the grid and renormalized without the current
  value; ``sigma = 0.2`` by default, the default standard deviation of ConfigSpace's one-exchange
  neighbourhood for numerical hyperparameters (``ConfigSpace.util.get_one_exchange_neighbourhood``,
  the neighbourhood of SMAC's local search, Hutter, Hoos & Leyton-Brown 2011, which passes a narrower
  0.05 for its many local steps). Categorical tokens keep the uniform draw.
- Neighbours (local search): an ordinal token's neighbours are the adjacent values (ConfigSpace's
  neighbours of an ordinal hyperparameter) and a doubling ladder ``i +- 2, +- 4, ...`` inside the
  grid, ``2 ceil(log2 D)`` at most, so a climb crosses a 101-value grid in a few moves instead of
  querying all 100 other values; categorical tokens keep every other value.
- Encoding ``"ordinal"`` (surrogates: BANANAS' MLP ensemble, the GP's kernels): an ordinal token
  is one feature ``u`` (times its activity), a conditional one also an activity bit (so an
  inactive token differs from its lowest value), a categorical token its one-hot block (zero when
  inactive).
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

MUTATION_SCALE = 0.2  # sigma of the Gaussian step on the unit axis (ConfigSpace's default stdev)


def step_logits(current: jax.Array, card: jax.Array, max_card: int, scale: float) -> jax.Array:
    """f32[max_card]: log-probabilities (unnormalized) of the Gaussian step from ``current`` on a grid of
    ``card`` values; ``-inf`` at ``current`` and past the grid."""
    v = jnp.arange(max_card)
    d = (v - current).astype(jnp.float32) / jnp.maximum(card - 1, 1).astype(jnp.float32)  # unit axis
    logits = -0.5 * (d / scale) ** 2
    return jnp.where((v < card) & (v != current), logits, -jnp.inf)


def step_probabilities(current: int, card: int, scale: float = MUTATION_SCALE) -> np.ndarray:
    """f64[card]: the mutation's distribution over the grid's values (host side, for tests and docs)."""
    d = (np.arange(card) - current) / max(card - 1, 1)
    p = np.exp(-0.5 * (d / scale) ** 2)
    p[current] = 0.0
    return p / p.sum()


def mutate_one(
    key: jax.Array,
    tokens: jax.Array,
    can: jax.Array,
    ordinal: Sequence[bool],
    cardinalities: Sequence[int],
    scale: float,
) -> jax.Array:
    """``tokens`` with one token of ``can`` (bool[N]) changed: a Gaussian step if it is ordinal, else a uniform
    other value (module doc)."""
    k_pos, k_val = jax.random.split(key)
    card = jnp.asarray(cardinalities, jnp.int32)
    pos = jax.random.categorical(k_pos, jnp.where(can, 0.0, -jnp.inf))
    cur, c = tokens[pos], card[pos]
    d = max(cardinalities)
    uniform = jnp.where((jnp.arange(d) < c) & (jnp.arange(d) != cur), 0.0, -jnp.inf)
    logits = jnp.where(jnp.asarray(ordinal)[pos], step_logits(cur, c, d, scale), uniform)
    new_val = jax.random.categorical(k_val, logits)
    return tokens.at[pos].set(new_val.astype(tokens.dtype))


def ladder(card: int) -> list[int]:
    """Offsets of an ordinal token's neighbours: +-1, +-2, +-4, ... below ``card``."""
    out, step = [], 1
    while step < card:
        out += [step, -step]
        step *= 2
    return out


def neighbor_edits(cardinalities: Sequence[int], ordinal: Sequence[bool]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Static edits ``(position, shift, ordinal)`` int32[K] x3 of the one-edit neighbourhood: ladder offsets for
    ordinal tokens, shifts ``1..D-1`` (mod ``D``) for categorical ones."""
    pos, shift, ords = [], [], []
    for i, (c, o) in enumerate(zip(cardinalities, ordinal)):
        steps = ladder(c) if o else list(range(1, c))
        pos += [i] * len(steps)
        shift += steps
        ords += [bool(o)] * len(steps)
    return np.asarray(pos, np.int32), np.asarray(shift, np.int32), np.asarray(ords, bool)


def neighbors(tokens: jax.Array, cardinalities: Sequence[int], ordinal: Sequence[bool]) -> tuple[jax.Array, jax.Array]:
    """``(int32[K, N], in_grid bool[K])``: the strings one edit away (``neighbor_edits``); an ordinal step past
    the grid's end is marked False (its row is clipped, not a real neighbour)."""
    pos, shift, ords = (jnp.asarray(a) for a in neighbor_edits(cardinalities, ordinal))
    card = jnp.asarray(cardinalities, jnp.int32)[pos]
    moved = tokens[pos] + shift
    in_grid = ~ords | ((moved >= 0) & (moved < card))
    new_vals = jnp.where(ords, jnp.clip(moved, 0, card - 1), moved % card)
    nbrs = jnp.broadcast_to(tokens, (pos.shape[0], tokens.shape[0]))
    return nbrs.at[jnp.arange(pos.shape[0]), pos].set(new_vals.astype(tokens.dtype)), in_grid


def feature_dim(cardinalities: Sequence[int], ordinal: Sequence[bool], conditional: Sequence[bool]) -> int:
    """Width of the ``"ordinal"`` encoding (module doc)."""
    return int(sum((1 + bool(k)) if o else c for c, o, k in zip(cardinalities, ordinal, conditional)))


def features(
    tokens: jax.Array,
    active: jax.Array,
    cardinalities: Sequence[int],
    ordinal: Sequence[bool],
    conditional: Sequence[bool],
) -> jax.Array:
    """f32[feature_dim]: ordinal tokens on the unit axis (and an activity bit where conditional), categorical
    ones one-hot; inactive tokens contribute zeros."""
    parts = []
    act = active.astype(jnp.float32)
    for i, (c, o, k) in enumerate(zip(cardinalities, ordinal, conditional)):
        if o:
            parts.append((tokens[i].astype(jnp.float32) / max(c - 1, 1) * act[i])[None])
            if k:
                parts.append(act[i][None])
        else:
            parts.append(jax.nn.one_hot(tokens[i], c, dtype=jnp.float32) * act[i])
    return jnp.concatenate(parts)
