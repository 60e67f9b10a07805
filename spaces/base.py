"""The space contract: fixed-length categorical token strings.

Every search space in the project (NAS-Bench-101 cells, NAS-Bench-201 cells,
tabular HPO grids, the search-space language) is presented to searchers as a
string of ``N`` categorical tokens, ``int32[N]``, where token ``i`` takes values
in ``range(cardinalities[i])``. The space object itself is static Python (it is
hashed by identity and closed over by jitted code); every method that takes a
token string is a pure, jittable function of ONE string: callers ``vmap``.

Methods:

- ``is_valid(tokens) -> bool[]``: a legal string (every token in range and the
  space's constraints hold).
- ``active(tokens) -> bool[N]``: which tokens matter for this string. Conditional
  spaces (a hyperparameter that only matters when another takes a value; a
  flattened search-space language) mark the others inactive; strings that differ
  only in inactive tokens are the same configuration (``canonical``).
- ``sample(key) -> int32[N]``: uniform over *valid* strings.
- ``mutate(key, tokens) -> int32[N]``: a valid string different from ``tokens``.
- ``neighbors(tokens) -> (int32[K, N], bool[K])``: the one-edit neighbourhood
  (local search); the mask marks valid, distinct neighbours.
- ``string_id(tokens) -> int32[]``: identical for strings that denote the same
  architecture (the canonical index for NAS-Bench-101; inactive tokens ignored),
  ``-1`` when invalid. Searchers use it to avoid spending queries twice. A space of
  ``2**31`` strings or more hashes its canonical string instead of numbering it
  (``spaces.string_ids``: the collision bound, and why a hash never repeats a query).
- ``step_mask(tokens, assigned, position) -> bool[D]``: values allowed at
  ``position`` given the tokens already ``assigned`` (bool[N]); lets an
  autoregressive policy sample valid strings only (e.g. the 9-edge limit).
- ``features(tokens, kind) -> f32[F]`` and ``feature_dim(kind)``: encodings
  for surrogates ("onehot" always; spaces add "adjacency", "path", ...).
- ``to_spec(tokens)`` / ``from_spec(spec)``: host-side conversion to and from a
  readable description.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from spaces.string_ids import grid_rows_fit, hash_tokens


class Space:
    """Base class: a categorical string space with per-token cardinalities.

    Subclasses set ``name``, ``cardinalities`` and ``token_names`` and override
    what differs from a product of independent categoricals.
    """

    name: str = "space"
    cardinalities: tuple[int, ...] = ()
    token_names: tuple[str, ...] = ()
    feature_kinds: tuple[str, ...] = ("onehot",)

    # -- static description -------------------------------------------------
    @property
    def num_tokens(self) -> int:
        return len(self.cardinalities)

    @property
    def max_cardinality(self) -> int:
        return max(self.cardinalities)

    @property
    def value_mask(self) -> np.ndarray:
        """bool[N, D]: value ``v`` exists for token ``i``."""
        d = self.max_cardinality
        return np.arange(d)[None, :] < np.asarray(self.cardinalities)[:, None]

    @property
    def size(self) -> int:
        """Number of token strings (not of distinct architectures)."""
        return math.prod(int(c) for c in self.cardinalities)  # exact: no int64 overflow on large grids

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, N={self.num_tokens})"

    # -- validity and ids ----------------------------------------------------
    def in_range(self, tokens: jax.Array) -> jax.Array:
        card = jnp.asarray(self.cardinalities, jnp.int32)
        return jnp.all((tokens >= 0) & (tokens < card))

    def is_valid(self, tokens: jax.Array) -> jax.Array:
        return self.in_range(tokens)

    def active(self, tokens: jax.Array) -> jax.Array:
        """bool[N]: the tokens that matter for ``tokens`` (all of them unless a space is conditional)."""
        return jnp.ones((self.num_tokens,), bool)

    def canonical(self, tokens: jax.Array) -> jax.Array:
        """``tokens`` with every inactive token set to 0: one string per configuration."""
        return jnp.where(self.active(tokens), tokens, 0).astype(tokens.dtype)

    @property
    def grid_strides(self) -> np.ndarray:
        """int64[N]: each token's place value in the product grid's row index (the last token varies fastest);
        exact below 2**63 strings, and ids use it only below 2**31 (``spaces.string_ids``)."""
        return np.cumprod([1] + list(self.cardinalities[::-1]))[:-1][::-1]

    def tokens_at_grid_row(self, grid_id: jax.Array) -> jax.Array:
        """int32[N]: the string whose product-grid row (``mixed_radix``) is ``grid_id``."""
        card = jnp.asarray(self.cardinalities, jnp.int32)
        return ((grid_id // jnp.asarray(self.grid_strides, jnp.int32)) % card).astype(jnp.int32)

    def mixed_radix(self, tokens: jax.Array) -> jax.Array:
        """Row index of a string in the full product grid (int32; grids of fewer than 2**31 strings)."""
        if not grid_rows_fit(self.size):
            raise ValueError(f"{self.name}: product grid too large for int32 ids")
        return jnp.sum(tokens.astype(jnp.int32) * jnp.asarray(self.grid_strides, jnp.int32))

    def string_id(self, tokens: jax.Array) -> jax.Array:
        """The canonical string's grid row, or its 31-bit hash where the grid has 2**31 rows or more (chosen
        from the cardinalities when traced; ``spaces.string_ids``); -1 for an invalid string."""
        if not grid_rows_fit(self.size):
            return jnp.where(self.is_valid(tokens), hash_tokens(self.canonical(tokens)), -1)
        return jnp.where(self.is_valid(tokens), self.mixed_radix(self.canonical(tokens)), -1)

    @property
    def num_configurations(self) -> int | None:
        """Distinct configurations (distinct valid strings after ``canonical``), None where not known: a query
        budget above it cannot be spent without querying a configuration twice (``nas.engine.budget``)."""
        return self.size if self.plain_product else None

    @property
    def configuration_ids(self) -> np.ndarray | None:
        """int32[K]: the sorted ``string_id`` of every distinct configuration, where they are grid rows known on
        the host but not all of them (equivalent strings share one: ``CategoricalSpace(canonical=...)``); None
        otherwise. With it, unqueried configurations are drawn as integers too (``nas.core.unseen_draw``)."""
        return None

    @property
    def plain_product(self) -> bool:
        """A plain product of categoricals: none of the methods that define validity or ids is overridden, so
        every string is valid and is one configuration. A subclass that overrides them keeps False unless it
        sets this property itself."""
        cls = type(self)
        return all(
            getattr(cls, m) is getattr(Space, m)
            for m in ("is_valid", "active", "canonical", "mixed_radix", "string_id")
        )

    @property
    def ids_are_grid_rows(self) -> bool:
        """Every string is valid and its ``string_id`` is its grid row (``mixed_radix``), one id per string:
        a ``plain_product`` of fewer than 2**31 strings (a larger one hashes, ``spaces.string_ids``).
        Searchers then draw unseen strings as integers (``nas.core.unseen_draw``)."""
        return self.plain_product and grid_rows_fit(self.size)

    # -- sampling ------------------------------------------------------------
    def sample_unconstrained(self, key: jax.Array) -> jax.Array:
        """Each token uniform over its values (no validity rejection)."""
        logits = jnp.where(jnp.asarray(self.value_mask), 0.0, -jnp.inf)
        return jax.random.categorical(key, logits, axis=-1).astype(jnp.int32)

    def sample(self, key: jax.Array) -> jax.Array:
        """Uniform over valid strings, by rejection (product spaces: 1 draw)."""

        def cond(carry):
            return ~self.is_valid(carry[1])

        def body(carry):
            k, _ = carry
            k, sub = jax.random.split(k)
            return k, self.sample_unconstrained(sub)

        key, sub = jax.random.split(key)
        first = self.sample_unconstrained(sub)
        if type(self).is_valid is Space.is_valid:  # a product space: every draw is valid, no loop to compile
            return first
        _, tokens = jax.lax.while_loop(cond, body, (key, first))
        return tokens

    def mutate(self, key: jax.Array, tokens: jax.Array) -> jax.Array:
        """Change one uniformly chosen token to a different value.

        This is the NAS-Bench-201 / HPO mutation used by BANANAS' code and by
        regularized evolution on these benchmarks. Spaces with validity
        constraints override it.
        """
        k_pos, k_val = jax.random.split(key)
        card = jnp.asarray(self.cardinalities, jnp.int32)
        # only active positions that have an alternative value
        can = (card > 1) & self.active(tokens)
        pos = jax.random.categorical(k_pos, jnp.where(can, 0.0, -jnp.inf))
        shift = 1 + jax.random.randint(k_val, (), 0, jnp.maximum(card[pos] - 1, 1))
        new_val = (tokens[pos] + shift) % card[pos]
        return tokens.at[pos].set(new_val.astype(tokens.dtype))

    def neighbors(self, tokens: jax.Array) -> tuple[jax.Array, jax.Array]:
        """All strings at Hamming distance one: ``K = sum(card - 1)`` rows."""
        pos_list, val_list = [], []
        for i, c in enumerate(self.cardinalities):
            for s in range(1, c):
                pos_list.append(i)
                val_list.append(s)
        pos = jnp.asarray(pos_list, jnp.int32)
        shift = jnp.asarray(val_list, jnp.int32)
        card = jnp.asarray(self.cardinalities, jnp.int32)
        new_vals = (tokens[pos] + shift) % card[pos]
        nbrs = jnp.broadcast_to(tokens, (pos.shape[0], self.num_tokens))
        nbrs = nbrs.at[jnp.arange(pos.shape[0]), pos].set(new_vals.astype(tokens.dtype))
        # an edit of an inactive token gives the same configuration: not a neighbour
        return nbrs, jax.vmap(self.is_valid)(nbrs) & self.active(tokens)[pos]

    def step_mask(self, tokens: jax.Array, assigned: jax.Array, position: jax.Array) -> jax.Array:
        """Values allowed at ``position`` given the ``assigned`` tokens."""
        del tokens, assigned
        return jnp.asarray(self.value_mask)[position]

    # -- features ------------------------------------------------------------
    def feature_dim(self, kind: str = "onehot") -> int:
        if kind == "onehot":
            return int(sum(self.cardinalities))
        raise self._unknown_kind(kind)

    def features(self, tokens: jax.Array, kind: str = "onehot") -> jax.Array:
        """Encodings for surrogates; ``onehot`` has all zeros for an inactive token."""
        if kind == "onehot":
            return onehot_features(tokens, self.cardinalities, self.active(tokens))
        raise self._unknown_kind(kind)

    def _unknown_kind(self, kind: str) -> ValueError:
        return ValueError(f"{self.name}: unknown feature kind {kind!r}; this space provides {list(self.feature_kinds)}")

    # -- readable specs (host side) ------------------------------------------
    def to_spec(self, tokens: Sequence[int] | np.ndarray) -> Any:
        return {n: int(t) for n, t in zip(self.token_names, np.asarray(tokens))}

    def from_spec(self, spec: Any) -> np.ndarray:
        missing = [n for n in self.token_names if n not in spec]
        if missing:
            raise ValueError(f"{self.name}: spec lacks {missing}")
        return np.asarray([int(spec[n]) for n in self.token_names], np.int32)


def onehot_features(tokens: jax.Array, cardinalities: Sequence[int], active: jax.Array | None = None) -> jax.Array:
    """Concatenated one-hot of each token: f32[sum(cardinalities)]; an inactive token (``active`` False)
    contributes zeros."""
    offsets = np.concatenate([[0], np.cumsum(cardinalities)[:-1]]).astype(np.int32)
    out = jnp.zeros(int(sum(cardinalities)), jnp.float32)
    ones = jnp.ones(tokens.shape, jnp.float32) if active is None else active.astype(jnp.float32)
    return out.at[jnp.asarray(offsets) + tokens].set(ones)


class CategoricalSpace(Space):
    """A product of independent categorical hyperparameters with value lists.

    Used for the tabular HPO benchmarks (HPOLib/FCNet, HPOBench MLP): token
    ``i`` indexes ``values[i]``. ``to_spec`` gives ``{name: value}``.
    """

    MAX_CANONICAL_TABLE = 1 << 20

    def __init__(
        self,
        name: str,
        values: dict[str, Sequence[Any]],
        canonical: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ):
        self.name = name
        if not isinstance(values, dict) or not values:
            raise ValueError(f"{name}: a CategoricalSpace needs one or more hyperparameters, got {values!r:.80}")
        self.values = {k: list(v) for k, v in values.items()}
        for k, v in self.values.items():
            if not v:
                raise ValueError(f"{name}: hyperparameter {k!r} has no values")
            bad = [x for x in v if isinstance(x, (float, np.floating)) and not np.isfinite(x)]
            if bad:  # NaN never equals itself (no lookup finds it); an infinity is no point of a grid either
                raise ValueError(f"{name}: hyperparameter {k!r} lists values that are not finite numbers: {bad}")
            if len({repr(x) for x in v}) != len(v):
                raise ValueError(f"{name}: hyperparameter {k!r} lists a value twice: {v}")
        self.token_names = tuple(self.values)
        self.cardinalities = tuple(len(v) for v in self.values.values())
        self._canonical_ids = None if canonical is None else self._canonical_table(canonical)

    def _canonical_table(self, canonical) -> np.ndarray:
        """int32[size]: the grid index of each string's canonical string (host, once).

        ``canonical(spec) -> spec`` says which configuration a spec denotes (e.g. two
        orderings of the same set of layers); strings mapped to one canonical spec
        share a ``string_id``, so searchers never pay twice for one network.
        """
        if self.size > self.MAX_CANONICAL_TABLE:
            raise ValueError(
                f"{self.name}: canonical= needs a table over all {self.size} strings (at most "
                f"{self.MAX_CANONICAL_TABLE}); subclass Space and override canonical() instead"
            )
        grid = np.stack(np.unravel_index(np.arange(self.size), self.cardinalities), 1)
        radix = self.grid_strides
        table = np.empty(self.size, np.int32)
        for i, row in enumerate(grid):
            canon = self.from_spec(canonical(self.to_spec(row)))
            table[i] = int(np.dot(canon, radix))
        if np.any(table[table] != table):
            raise ValueError(f"{self.name}: canonical() must be idempotent (canonical of a canonical spec is itself)")
        return table

    @property
    def plain_product(self) -> bool:
        cls = type(self)
        plain = all(getattr(cls, m) is getattr(Space, m) for m in ("is_valid", "active", "mixed_radix", "string_id"))
        return plain and cls.canonical is CategoricalSpace.canonical and self._canonical_ids is None

    @property
    def num_configurations(self) -> int | None:
        plain = all(getattr(type(self), m) is getattr(Space, m) for m in ("is_valid", "mixed_radix", "string_id"))
        if self._canonical_ids is not None and plain and type(self).canonical is CategoricalSpace.canonical:
            return int(np.unique(self._canonical_ids).size)  # one configuration per canonical string
        return super().num_configurations

    @property
    def configuration_ids(self) -> np.ndarray | None:
        plain = all(getattr(type(self), m) is getattr(Space, m) for m in ("is_valid", "mixed_radix", "string_id"))
        if self._canonical_ids is None or not plain or type(self).canonical is not CategoricalSpace.canonical:
            return None
        return np.unique(self._canonical_ids).astype(np.int32)  # the canonical rows: one per configuration

    def canonical(self, tokens: jax.Array) -> jax.Array:
        if self._canonical_ids is None:
            return super().canonical(tokens)
        cid = jnp.asarray(self._canonical_ids)[self.mixed_radix(jnp.clip(tokens, 0, None))]
        return self.tokens_at_grid_row(cid).astype(tokens.dtype)

    def to_spec(self, tokens):
        return {n: self.values[n][int(t)] for n, t in zip(self.token_names, np.asarray(tokens))}

    def from_spec(self, spec):
        out = []
        for n in self.token_names:
            if n not in spec:
                raise ValueError(f"{self.name}: spec lacks hyperparameter {n!r}")
            vals = self.values[n]
            v = spec[n]
            if isinstance(v, float) or isinstance(vals[0], float):
                hits = [i for i, x in enumerate(vals) if np.isclose(float(x), float(v))]
            else:
                hits = [i for i, x in enumerate(vals) if x == v]
            if not hits:
                raise ValueError(f"{self.name}: {n}={v!r} is not one of {vals}")
            out.append(hits[0])
        return np.asarray(out, np.int32)
