"""A bounded language space as the library's fixed-length token space, with activity masks.

``FlatLanguageSpace(LanguageSpace(fn, name))`` is a ``spaces.base.Space``: token ``i`` is the
value index of the ``i``-th independent hyperparameter key found by ``explore`` (every one that
some architecture assigns). Under a given string only some tokens are *active*: those the
traversal of the architecture assigns (Negrinho et al. 2019, Algorithms 1-3). ``active`` is a
jittable function of the string (module existence propagated down the substitution tree, then
"some existing module references the slot"), so searchers treat strings that differ only in
inactive tokens as one architecture (``canonical``, ``string_id``), one-hot features are zero
for inactive tokens and mutation changes one active token: exactly one independent
hyperparameter along the traversal. Tokens that a mutation activates get uniform values (the
paper's searchers assign new hyperparameters at random after a change).

Host side: ``decode(tokens)`` replays the architecture (its ``Architecture``, the terminal graph
and the tokens it read), ``to_spec``/``from_spec`` convert to and from the architecture's JSON
values, ``compile(tokens)`` gives the flax model.

Feature kinds: ``onehot`` and ``hashed`` (SMBO's features, Section 7.2: hashed hyperparameter
values ``(slot, value)`` and hashed module identities of the modules that exist, ``hash_dim``
buckets). ``string_id`` is the mixed-radix index of the canonical string when it fits in int32,
else a 31-bit hash of it (``spaces.string_ids``: two architectures collide with probability about 2^-31).
"""

from __future__ import annotations

import functools
import hashlib
import math

import jax
import jax.numpy as jnp
import numpy as np

from spaces.base import Space, onehot_features
from spaces.language.architecture import Architecture
from spaces.language.compile import CompiledNetwork, compile_graph
from spaces.language.core import Graph, unassigned_independent
from spaces.language.explore import explore


def stable_hash(text: str, mod: int) -> int:
    """A process-independent hash of ``text`` in ``[0, mod)``."""
    return int.from_bytes(hashlib.md5(text.encode()).digest()[:8], "little") % mod


class FlatLanguageSpace(Space):
    """Fixed-length token form of a bounded ``LanguageSpace`` (``spaces.language.search_space``; module docstring)."""

    feature_kinds = ("onehot", "hashed")

    def __init__(self, space, hash_dim: int = 256, validity_fn=None, **explore_options):
        self.language = space
        self.name = space.name
        self.hash_dim = int(hash_dim)
        self.validity_fn = validity_fn
        ex = explore(space, **explore_options)
        self.exploration = ex
        self.slot_keys = list(ex.slots)
        if not self.slot_keys:
            raise ValueError(f"{space.name} has no independent hyperparameter: nothing to search")
        self.slot_index = {k: i for i, k in enumerate(self.slot_keys)}
        self.values = [ex.slots[k] for k in self.slot_keys]
        self.cardinalities = tuple(len(v) for v in self.values)
        self.token_names = tuple(f"{ex.slot_names[k]}@{k}" for k in self.slot_keys)
        self._build_tables()

    @property
    def size(self) -> int:
        """Number of token strings (exact, as a Python int)."""
        return math.prod(self.cardinalities)

    @functools.cached_property
    def num_configurations(self) -> int | None:
        """Distinct architectures of the language space (``spaces.language.counting``), None when the count
        needs too many replays."""
        from spaces.language.counting import CountingLimitError

        try:
            return int(self.language.count())
        except CountingLimitError:
            return None

    # -- tables for the jittable activity ----------------------------------------------------
    def _build_tables(self) -> None:
        infos = self.exploration.modules
        keep: set[str] = set()
        for key, info in infos.items():  # modules that reference slots, and their ancestors
            if info.refs:
                k = key
                while k is not None and k not in keep:
                    keep.add(k)
                    k = infos[k].parent
        mods = [k for k in infos if k in keep]  # creation order: parents first
        pos = {k: i for i, k in enumerate(mods)}
        subs = [k for k in mods if infos[k].is_sub]
        spos = {k: i for i, k in enumerate(subs)}
        n, m, s = self.num_tokens, len(mods), max(len(subs), 1)
        self._level = np.zeros(m, np.int32)
        self._parent = np.zeros(m, np.int32)
        self._parent_sub = np.zeros(m, np.int32)
        self._ctx = np.zeros(m, np.int32)
        self._refs = np.zeros((m, n), bool)
        for i, k in enumerate(mods):
            info = infos[k]
            if info.parent is not None:
                self._level[i] = self._level[pos[info.parent]] + 1
                self._parent[i], self._parent_sub[i], self._ctx[i] = pos[info.parent], spos[info.parent], info.context
            self._refs[i, [self.slot_index[r] for r in info.refs]] = True
        r_max = max([len(infos[k].roots) for k in subs] + [1])
        self._roots = np.zeros((s, r_max), np.int32)
        self._radix = np.zeros((s, r_max), np.int32)
        tables, offsets = [], []
        for j, k in enumerate(subs):
            info = infos[k]
            offsets.append(sum(len(t) for t in tables))
            tables.append(info.table)
            if info.leaf:
                continue
            cards = [self.cardinalities[self.slot_index[r]] for r in info.roots]
            radix = np.cumprod([1] + cards[::-1])[:-1][::-1]
            self._roots[j, : len(cards)] = [self.slot_index[r] for r in info.roots]
            self._radix[j, : len(cards)] = radix
        self._offsets = np.asarray(offsets or [0], np.int32)
        self._table = np.concatenate(tables or [np.zeros(1, np.int32)]).astype(np.int32)
        self._num_levels = int(self._level.max()) if m else 0
        self._mod_keys = mods
        # hashed features: (slot, value) buckets and module buckets
        d = self.max_cardinality
        self._slot_buckets = np.zeros((n, d), np.int32)
        for i in range(n):
            for v, val in enumerate(self.values[i]):
                self._slot_buckets[i, v] = stable_hash(f"{self.token_names[i]}={val!r}", self.hash_dim)
        self._mod_buckets = np.asarray(
            [stable_hash(f"module {infos[k].type_name}@{k}", self.hash_dim) for k in mods] or [0], np.int32
        )

    def exists(self, tokens: jax.Array, xp=jnp) -> jax.Array:
        """bool[M]: which of the tracked modules exist in the architecture of ``tokens``."""
        m = len(self._mod_keys)
        if m == 0:
            return xp.zeros((0,), bool)
        combo = xp.sum(tokens[self._roots] * self._radix, axis=1)
        sel = xp.asarray(self._table)[xp.asarray(self._offsets) + combo]
        level = xp.asarray(self._level)
        ex = level == 0
        match = sel[self._parent_sub] == self._ctx
        for lv in range(1, self._num_levels + 1):
            ex = xp.where(level == lv, ex[self._parent] & match, ex)
        return ex

    def active(self, tokens: jax.Array) -> jax.Array:
        return self._active(tokens, jnp)

    def _active(self, tokens, xp):
        if not self._mod_keys:
            return xp.zeros((self.num_tokens,), bool)
        ex = self.exists(tokens, xp)
        return xp.any(ex[:, None] & xp.asarray(self._refs), axis=0)

    def active_np(self, tokens) -> np.ndarray:
        """``active`` in numpy (host side)."""
        return self._active(np.asarray(tokens, np.int64), np)

    # -- validity, ids, mutation -------------------------------------------------------------
    def is_valid(self, tokens):
        ok = self.in_range(tokens)
        if self.validity_fn is not None:
            ok = ok & self.validity_fn(jnp.clip(tokens, 0, jnp.asarray(self.cardinalities) - 1))
        return ok

    def mutate(self, key, tokens):
        """One active token changed; tokens activated by the change get uniform values."""

        def once(k):
            k_mut, k_new = jax.random.split(k)
            before = self.active(tokens)
            changed = Space.mutate(self, k_mut, tokens)
            return jnp.where(before, changed, self.sample_unconstrained(k_new)).astype(tokens.dtype)

        if self.validity_fn is None:
            return once(key)

        def cond(c):
            return ~self.is_valid(c[1]) & (c[2] < 64)

        def body(c):
            k, _, i = c
            k, sub = jax.random.split(k)
            return k, once(sub), i + 1

        key, sub = jax.random.split(key)
        return jax.lax.while_loop(cond, body, (key, once(sub), jnp.int32(0)))[1]

    # -- features ------------------------------------------------------------------------------
    def feature_dim(self, kind: str = "onehot") -> int:
        if kind == "hashed":
            return self.hash_dim
        return super().feature_dim(kind)

    def features(self, tokens, kind: str = "onehot"):
        if kind == "onehot":
            return onehot_features(tokens, self.cardinalities, self.active(tokens))
        if kind == "hashed":
            act = self.active(tokens).astype(jnp.float32)
            buckets = jnp.asarray(self._slot_buckets)[jnp.arange(self.num_tokens), tokens]
            out = jnp.zeros(self.hash_dim, jnp.float32).at[buckets].add(act)
            if self._mod_keys:
                out = out.at[jnp.asarray(self._mod_buckets)].add(self.exists(tokens).astype(jnp.float32))
            return out
        raise self._unknown_kind(kind)

    # -- host side -----------------------------------------------------------------------------
    def decode(self, tokens) -> tuple[Graph, Architecture, np.ndarray]:
        """Replays ``tokens``: (terminal graph, architecture, bool[N] tokens read)."""
        tokens = np.asarray(tokens)
        g = self.language.build()
        used = np.zeros(self.num_tokens, bool)
        values = []
        for h in unassigned_independent(g):
            i = self.slot_index.get(h.key)
            if i is None:
                raise KeyError(f"{h.name} (key {h.key}) was not found by the flattening: is the space deterministic?")
            v = self.values[i][int(tokens[i])]
            h.assign_value(v)
            used[i] = True
            values.append(v)
        return g, Architecture(tuple(values), self.name), used

    def compile(self, tokens) -> CompiledNetwork:
        return compile_graph(self.decode(tokens)[0])

    def to_spec(self, tokens) -> dict:
        return {"space": self.name, "values": list(self.decode(tokens)[1].values)}

    def from_spec(self, spec) -> np.ndarray:
        """Tokens (inactive ones 0) of an ``Architecture`` of this space, its JSON dict, or its list of values."""
        values = Architecture.of(spec, self.name).values
        g = self.language.build()
        tokens = np.zeros(self.num_tokens, np.int32)
        used = 0
        for i, h in enumerate(unassigned_independent(g)):
            if i >= len(values):
                raise ValueError(f"{self.name}: the architecture has {len(values)} values, the space needs more")
            tokens[self.slot_index[h.key]] = h.index_of(values[i])
            h.assign_value(values[i])
            used = i + 1
        if used != len(values):
            raise ValueError(f"{self.name}: the architecture has {len(values)} values, the space takes {used}")
        return tokens


def __getattr__(name: str):
    if name == "hash_tokens":  # moved to spaces.string_ids (every space's hash, not the language's only)
        import warnings

        from spaces.string_ids import hash_tokens

        warnings.warn("spaces.language.flatten.hash_tokens is now spaces.string_ids.hash_tokens", DeprecationWarning,
                      stacklevel=2)  # fmt: skip
        return hash_tokens
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
