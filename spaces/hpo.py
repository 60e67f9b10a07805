"""Hyperparameter spaces with numeric grids and conditions, flattened to the token-string contract.

A space is declared as an ordered list of hyperparameters; each becomes one
categorical token over its values (``spaces.base``: every space is a
fixed-length string of categorical tokens):

- ``categorical(name, choices)``: unordered choices (an activation, a solver);
- ``integer(name, low, high, num=..., log=...)`` and
  ``floating(name, low, high, num, log=..., zero=...)``: a numeric
  hyperparameter as a token over ``num`` grid values, linear or logarithmic
  (``zero=True`` prepends 0, e.g. "no penalty" before a log grid of penalties);
- ``grid(name, values)``: an explicit ordered numeric grid.

Numeric tokens are *ordinal* (``HPOSpace.ordinal``): their index order is the
value order, which model-based peers such as TPE use. ``HPOSpace(...,
order_aware=True)`` also makes mutation, neighbours and the ``"ordinal"``
encoding use it (``spaces.ordinal``); the default keeps the plain categorical
operators. Tuner-style declarations (``Float``, ``Int``) are in ``spaces.params``.

Conditions (``when={"solver": ["sgd"]}``): a hyperparameter is *active* only
when every named parent is active and takes one of the listed values; parents
must come earlier in the list, so the list order is a top-down order (the
flattening of a conditional space, as in DeepArchitect's search-space language,
Negrinho & Gordon, 2017). ``active(tokens)`` evaluates the conditions;
``canonical`` sets inactive tokens to 0, so strings that differ only in inactive
tokens have one ``string_id``. ``sample`` draws every token uniformly and then
zeroes the inactive ones (top-down sampling: a child is drawn only where its
parent lets it matter); ``mutate`` changes one *active* token and draws fresh
values for the children it activates; ``neighbors`` edits active tokens only;
``step_mask`` lets an autoregressive policy put an inactive token (parents
already decided) at value 0, so a policy in the natural order samples canonical
strings. ``to_spec``/``from_spec`` convert to a dict of the active
hyperparameters only.

Example::

    space = HPOSpace("toy", [
        categorical("solver", ["sgd", "adam"]),
        floating("lr", 1e-4, 1e-1, num=7, log=True),
        grid("momentum", [0.0, 0.9, 0.99], when={"solver": ["sgd"]}),
    ])
    space.to_spec(space.from_spec({"solver": "adam", "lr": 1e-3}))  # {"solver": "adam", "lr": 0.001}
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from spaces import ordinal as order_ops
from spaces.base import Space


@dataclasses.dataclass(frozen=True)
class Hyperparameter:
    """One hyperparameter: its grid of ``values``, whether they are ordered, its condition and why it is so."""

    name: str
    values: tuple
    ordinal: bool
    when: tuple[tuple[str, tuple], ...] = ()  # ((parent, allowed values), ...), all must hold
    doc: str = ""


def _when(when: Mapping[str, Sequence[Any]] | None) -> tuple[tuple[str, tuple], ...]:
    if not when:
        return ()
    out = []
    for parent, allowed in when.items():
        if isinstance(allowed, (str, bytes)) or not isinstance(allowed, Sequence):
            allowed = [allowed]
        out.append((parent, tuple(allowed)))
    return tuple(out)


def categorical(name: str, choices: Sequence[Any], *, when=None, doc: str = "") -> Hyperparameter:
    """Unordered choices (strings, booleans, ...)."""
    if len(choices) < 1 or len(set(map(repr, choices))) != len(choices):
        raise ValueError(f"hyperparameter {name!r}: choices must be non-empty and distinct, got {list(choices)}")
    # a NaN choice is never equal to itself (a value lookup fails), an infinite one is never a usable setting
    bad = [c for c in choices if isinstance(c, (float, np.floating)) and not np.isfinite(c)]
    if bad:
        raise ValueError(f"hyperparameter {name!r}: numeric choices must be finite, got {bad} in {list(choices)}")
    return Hyperparameter(name, tuple(choices), False, _when(when), doc)


def grid(name: str, values: Sequence[float], *, when=None, doc: str = "") -> Hyperparameter:
    """An explicit ordered numeric grid (strictly increasing)."""
    vals = [v.item() if isinstance(v, np.generic) else v for v in values]
    if len(vals) < 1 or any(not isinstance(v, (int, float)) or isinstance(v, bool) for v in vals):
        raise ValueError(f"hyperparameter {name!r}: a grid needs numbers, got {list(values)}")
    if not np.all(np.isfinite(np.asarray(vals, np.float64))):
        raise ValueError(f"hyperparameter {name!r}: grid values must be finite numbers, got {vals}")
    if np.any(np.diff(np.asarray(vals, np.float64)) <= 0):
        raise ValueError(f"hyperparameter {name!r}: grid values must be strictly increasing, got {vals}")
    return Hyperparameter(name, tuple(vals), True, _when(when), doc)


def _check_num(name: str, num, optional: bool = False) -> None:
    """``num`` (grid points) is an integer >= 1 (or None where ``optional``)."""
    if optional and num is None:
        return
    if isinstance(num, bool) or not isinstance(num, (int, np.integer)) or num < 1:
        raise ValueError(f"hyperparameter {name!r}: num (grid points) must be an integer >= 1, got {num!r}")


def integer(
    name: str, low: int, high: int, *, num: int | None = None, log: bool = False, when=None, doc=""
) -> Hyperparameter:
    """Integers from ``low`` to ``high``: every integer (``num=None``, linear) or ``num`` grid points, rounded
    (``log=True``: geometric, e.g. 8, 16, ..., 256)."""
    _check_num(name, num, optional=True)
    if not (isinstance(low, int) and isinstance(high, int)) or low > high or (log and low < 1):
        raise ValueError(
            f"hyperparameter {name!r}: need integers low <= high (low >= 1 on a log grid), got {low}, {high}"
        )
    if num is None:
        if log:
            raise ValueError(f"hyperparameter {name!r}: a log grid of integers needs num")
        vals = list(range(low, high + 1))
    else:
        pts = np.geomspace(low, high, num) if log else np.linspace(low, high, num)
        vals = sorted({int(round(p)) for p in pts})
        if len(vals) != num:
            raise ValueError(f"hyperparameter {name!r}: {num} points between {low} and {high} round to duplicates")
    return grid(name, vals, when=when, doc=doc)


def floating(
    name: str, low: float, high: float, num: int, *, log: bool = False, zero: bool = False, when=None, doc: str = ""
) -> Hyperparameter:
    """``num`` floats from ``low`` to ``high`` (``log=True``: geometric); ``zero=True`` prepends 0.0."""
    _check_num(name, num)
    bounds = [b.item() if isinstance(b, np.generic) else b for b in (low, high)]
    if any(isinstance(b, bool) or not isinstance(b, (int, float)) or not np.isfinite(b) for b in bounds):
        raise ValueError(f"hyperparameter {name!r}: low and high must be finite numbers, got {low!r}, {high!r}")
    if low > high or (log and low <= 0):
        raise ValueError(f"hyperparameter {name!r}: need low <= high (low > 0 on a log grid), got {low}, {high}")
    pts = np.geomspace(low, high, num) if log else np.linspace(low, high, num)
    vals = [float(f"{p:.6g}") for p in pts]  # readable specs: 0.001, not 0.0010000000000000002
    return grid(name, ([0.0] if zero else []) + vals, when=when, doc=doc)


class HPOSpace(Space):
    """A flattened conditional hyperparameter space (module docstring)."""

    feature_kinds = ("onehot",)

    def __init__(
        self,
        name: str,
        hyperparameters: Sequence[Hyperparameter],
        *,
        order_aware: bool = False,
        mutation_scale: float = order_ops.MUTATION_SCALE,
    ):
        self.name = name
        if not (isinstance(mutation_scale, (int, float)) and 0 < mutation_scale < math.inf):
            raise ValueError(
                f"{name}: mutation_scale must be a positive number (0.2 = ConfigSpace's), got {mutation_scale!r}"
            )
        self.order_aware, self.mutation_scale = bool(order_aware), float(mutation_scale)
        if self.order_aware:
            self.feature_kinds = ("ordinal", "onehot")
        self.hyperparameters = tuple(hyperparameters)
        if not self.hyperparameters or not all(isinstance(h, Hyperparameter) for h in self.hyperparameters):
            raise ValueError(
                f"{name}: an HPOSpace needs one or more hyperparameters (categorical, integer, floating, grid), "
                f"got {list(hyperparameters)!r:.100}"
            )
        names = [h.name for h in self.hyperparameters]
        if len(set(names)) != len(names):
            raise ValueError(f"{name}: hyperparameter names repeat: {names}")
        self.token_names = tuple(names)
        self.cardinalities = tuple(len(h.values) for h in self.hyperparameters)
        self.ordinal = tuple(h.ordinal for h in self.hyperparameters)
        # each hyperparameter its own value family (policies/base.value_families): values mean different things
        self.value_families = np.arange(len(names), dtype=np.int32)
        self._conditions = []  # per token: [(parent index, bool[D] allowed parent values), ...]
        d = self.max_cardinality
        for i, h in enumerate(self.hyperparameters):
            conds = []
            for parent, allowed in h.when:
                if parent not in names[:i]:
                    where = "is not a hyperparameter" if parent not in names else "must come before it"
                    raise ValueError(f"{name}: condition of {h.name!r} on {parent!r}: the parent {where}")
                p = names.index(parent)
                mask = np.zeros(d, bool)
                for v in allowed:
                    mask[self.value_index(parent, v)] = True
                conds.append((p, mask))
            self._conditions.append(conds)
        self.conditional = tuple(bool(c) for c in self._conditions)

    @property
    def num_configurations(self) -> int | None:
        """Assignments of the active hyperparameters (strings that differ in inactive tokens are one):
        summed over the values of the hyperparameters that condition others, canonical ones only."""
        parents = sorted({p for conds in self._conditions for p, _ in conds})
        if math.prod(self.cardinalities[p] for p in parents) > 1 << 20:
            return None  # too many parent assignments to list
        total = 0
        for values in itertools.product(*[range(self.cardinalities[p]) for p in parents]):
            tokens = np.zeros(self.num_tokens, np.int32)
            tokens[parents] = values
            act = self.active_host(tokens)
            if any(v and not act[p] for p, v in zip(parents, values)):
                continue  # an inactive parent takes its canonical value 0 only
            total += math.prod(c for i, c in enumerate(self.cardinalities) if act[i] and i not in parents)
        return total

    def index(self, name: str) -> int:
        """Token position of hyperparameter ``name``."""
        if name not in self.token_names:
            raise ValueError(f"{self.name}: no hyperparameter {name!r}; it has {list(self.token_names)}")
        return self.token_names.index(name)

    def value_index(self, name: str, value: Any) -> int:
        """Token value of ``value`` on hyperparameter ``name`` (numeric grids match with ``np.isclose``)."""
        h = self.hyperparameters[self.index(name)]
        if h.ordinal and isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
            hits = [i for i, x in enumerate(h.values) if np.isclose(float(x), float(value), rtol=1e-6, atol=0.0)]
            hits.sort(key=lambda i: abs(float(h.values[i]) - float(value)))  # the closest of near-equal values
        else:
            hits = [i for i, x in enumerate(h.values) if x == value and type(x) is type(value)]
        if not hits:
            raise ValueError(f"{self.name}: {name}={value!r} is not one of {list(h.values)}")
        return hits[0]

    def numeric_table(self) -> np.ndarray:
        """f32[N, D]: the value of token ``v`` at position ``i`` for numeric hyperparameters (the index otherwise)."""
        out = np.zeros((self.num_tokens, self.max_cardinality), np.float32)
        for i, h in enumerate(self.hyperparameters):
            out[i, : len(h.values)] = h.values if h.ordinal else np.arange(len(h.values))
        return out

    # -- conditions ------------------------------------------------------------------
    def active(self, tokens: jax.Array) -> jax.Array:
        act = []
        for conds in self._conditions:
            a = jnp.bool_(True)
            for p, mask in conds:
                a = a & act[p] & jnp.asarray(mask)[tokens[p]]
            act.append(a)
        return jnp.stack(act)

    def active_host(self, tokens) -> np.ndarray:
        """``active`` in numpy (host loops: one string at a time without dispatching JAX ops)."""
        tokens = np.asarray(tokens)
        act = np.ones(self.num_tokens, bool)
        for i, conds in enumerate(self._conditions):
            for p, mask in conds:
                act[i] &= act[p] and bool(mask[tokens[p]])
        return act

    def known_inactive(self, tokens: jax.Array, assigned: jax.Array) -> jax.Array:
        """bool[N]: inactive whatever the unassigned tokens are (a decided parent rules it out)."""
        out = []
        for conds in self._conditions:
            off = jnp.bool_(False)
            for p, mask in conds:
                off = off | out[p] | (assigned[p] & ~jnp.asarray(mask)[tokens[p]])
            out.append(off)
        return jnp.stack(out)

    def sample(self, key: jax.Array) -> jax.Array:
        return self.canonical(self.sample_unconstrained(key))

    def mutate(self, key: jax.Array, tokens: jax.Array) -> jax.Array:
        """One active token changed (order-aware: a Gaussian step on an ordinal one, ``spaces.ordinal``);
        children it activates get uniform values; canonical."""
        k_mut, k_new = jax.random.split(key)
        if self.order_aware:
            can = (jnp.asarray(self.cardinalities) > 1) & self.active(tokens)
            new = order_ops.mutate_one(k_mut, tokens, can, self.ordinal, self.cardinalities, self.mutation_scale)
        else:
            new = super().mutate(k_mut, tokens)
        woke = self.active(new) & ~self.active(tokens)
        new = jnp.where(woke, self.sample_unconstrained(k_new), new)
        return self.canonical(new)

    def neighbors(self, tokens: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Edits of active tokens (order-aware: adjacent values and a doubling ladder on ordinal ones)."""
        if not self.order_aware:
            nbrs, ok = super().neighbors(self.canonical(tokens))
            return jax.vmap(self.canonical)(nbrs), ok
        tokens = self.canonical(tokens)
        nbrs, in_grid = order_ops.neighbors(tokens, self.cardinalities, self.ordinal)
        pos = order_ops.neighbor_edits(self.cardinalities, self.ordinal)[0]
        return jax.vmap(self.canonical)(nbrs), in_grid & self.active(tokens)[jnp.asarray(pos)]

    def feature_dim(self, kind: str = "onehot") -> int:
        if kind == "ordinal" and self.order_aware:
            return order_ops.feature_dim(self.cardinalities, self.ordinal, self.conditional)
        return super().feature_dim(kind)

    def features(self, tokens: jax.Array, kind: str = "onehot") -> jax.Array:
        """``onehot``, and for an order-aware space ``ordinal``: ordinal tokens on a unit numeric axis."""
        if kind == "ordinal" and self.order_aware:
            return order_ops.features(tokens, self.active(tokens), self.cardinalities, self.ordinal, self.conditional)
        return super().features(tokens, kind)

    def step_mask(self, tokens: jax.Array, assigned: jax.Array, position: jax.Array) -> jax.Array:
        vm = jnp.asarray(self.value_mask)[position]
        only_zero = jnp.arange(self.max_cardinality) == 0
        return jnp.where(self.known_inactive(tokens, assigned)[position], only_zero, vm)

    # -- readable specs --------------------------------------------------------------
    def to_spec(self, tokens) -> dict[str, Any]:
        tokens = np.asarray(tokens)
        act = self.active_host(tokens)
        return {h.name: h.values[int(t)] for h, t, a in zip(self.hyperparameters, tokens, act) if a}

    def from_spec(self, spec: Mapping[str, Any]) -> np.ndarray:
        """Tokens of a dict that names exactly the active hyperparameters (top-down)."""
        unknown = [k for k in spec if k not in self.token_names]
        if unknown:
            raise ValueError(
                f"{self.name}: spec names unknown hyperparameter(s) {unknown}; known: {list(self.token_names)}"
            )
        tokens = np.zeros(self.num_tokens, np.int32)
        for i, h in enumerate(self.hyperparameters):
            is_active = bool(self.active_host(tokens)[i])  # its parents come earlier: already final
            if is_active and h.name not in spec:
                raise ValueError(f"{self.name}: spec lacks active hyperparameter {h.name!r}")
            if not is_active and h.name in spec:
                cond = ", ".join(f"{p} in {list(v)}" for p, v in h.when)
                raise ValueError(f"{self.name}: {h.name!r} is inactive here (it needs {cond}); leave it out")
            if is_active:
                tokens[i] = self.value_index(h.name, spec[h.name])
        return tokens

    def describe(self) -> str:
        """One line per hyperparameter: grid, condition, and why (for docs)."""
        lines = []
        for h in self.hyperparameters:
            cond = " if " + " and ".join(f"{p} in {list(v)}" for p, v in h.when) if h.when else ""
            lines.append(f"{h.name}: {list(h.values)}{cond}. {h.doc}".rstrip())
        return "\n".join(lines)


# -- the MLP space of Section VIII ------------------------------------------------------------------------
def mlp_space(max_iter: bool = True) -> HPOSpace:
    """The 10 hyperparameters of the MLP regressor tuned in "Hyperparameter optimization with REINFORCE and
    Transformers", Section VIII (the paper names learning rate, L1 and L2 penalties, hidden layer size, number
    of iterations and activation; the rest follow scikit-learn's ``MLPRegressor``). Grids: see ``describe()``
    and docs/research/hpo.md. ``max_iter=False`` leaves the number of iterations out (the 9 others, space
    ``mlp_without_max_iter``): where iterations are the fidelity, the searcher chooses them as budgets."""
    space = HPOSpace(
        "mlp",
        [
            categorical(
                "activation", ["identity", "logistic", "tanh", "relu"], doc="scikit-learn's four activations."
            ),
            integer(
                "hidden_layer_size", 8, 128, num=5, log=True,
                doc="Units of the one hidden layer, doubling from 8 to 128 (scikit-learn's default 100 lies inside).",
            ),
            categorical(
                "solver", ["sgd", "adam"],
                doc="scikit-learn's first-order solvers (L-BFGS is full-batch and is left out).",
            ),
            floating(
                "learning_rate_init", 1e-4, 1e-1, 7, log=True,
                doc="Half-decade log grid around scikit-learn's 1e-3; 1e-1 with SGD momentum can diverge (-inf).",
            ),
            grid(
                "momentum", [0.0, 0.5, 0.9, 0.95, 0.99], when={"solver": ["sgd"]},
                doc="Nesterov momentum of SGD (scikit-learn: 0.9); only SGD has it.",
            ),
            grid(
                "beta_1", [0.5, 0.8, 0.9, 0.99], when={"solver": ["adam"]},
                doc="Adam's first-moment decay (scikit-learn: 0.9); only Adam has it.",
            ),
            floating(
                "alpha", 1e-6, 1e-1, 6, log=True, zero=True,
                doc="L2 penalty (scikit-learn's alpha, default 1e-4): none or a decade grid 1e-6 .. 1e-1.",
            ),
            floating(
                "l1", 1e-6, 1e-1, 6, log=True, zero=True,
                doc="L1 penalty (not in scikit-learn; the paper tunes one): none or 1e-6 .. 1e-1, scaled as alpha.",
            ),
            grid(
                "batch_size", [16, 32, 64],
                doc="Rows per step (scikit-learn: min(200, n)); every step computes 64 rows, the unused ones masked.",
            ),
            grid(
                "max_iter", [50, 100, 200, 400, 800],
                doc="Optimizer steps (scikit-learn counts epochs; steps make the cost independent of the data size).",
            ),
        ],
    )  # fmt: skip
    if max_iter:
        return space
    return HPOSpace("mlp_without_max_iter", [h for h in space.hyperparameters if h.name != "max_iter"])
