"""The many-seed runner: one search run is one array program.

``make_search(searcher, benchmark) -> run(key, benchmark) -> History`` scans
ask -> query -> tell until the searcher's query budget is spent. Step ``t``
uses keys derived with ``jax.random.fold_in(key, t)``, so a run split into
chunks (the host loop in ``nas.host_loop``) gives exactly the same numbers as
one uninterrupted scan.

The benchmark is an argument (a pytree of table arrays), not a closure, so
large tables are not baked into the compiled program as constants.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from nas.searcher import Searcher

INIT_FOLD = 0x7FFFFFFF  # init key = fold_in(key, INIT_FOLD); step t uses fold_in(key, t)


@struct.dataclass
class History:
    tokens: jax.Array  # int32[T, N]: every queried string, in query order
    valid: jax.Array  # f32[T]: the validation score the searcher saw
    test: jax.Array  # f32[T]: seed-mean test score (validation if no test split)
    cost: jax.Array  # f32[T]


@struct.dataclass
class RunState:
    searcher: Any
    history: History
    step: jax.Array  # int32[]


def init_state(searcher: Searcher, key: jax.Array) -> RunState:
    steps, b, n = searcher.num_steps, searcher.batch_size, searcher.space.num_tokens
    total = steps * b
    hist = History(
        tokens=jnp.zeros((total, n), jnp.int32),
        valid=jnp.full((total,), -jnp.inf, jnp.float32),
        test=jnp.full((total,), -jnp.inf, jnp.float32),
        cost=jnp.zeros((total,), jnp.float32),
    )
    return RunState(searcher=searcher.init(jax.random.fold_in(key, INIT_FOLD)), history=hist, step=jnp.int32(0))


def search_step(searcher: Searcher, benchmark, key: jax.Array, state: RunState) -> tuple[RunState, dict]:
    """One ask/query/tell step; its keys depend only on ``(key, state.step)``."""
    k_ask, k_query, k_tell = jax.random.split(jax.random.fold_in(key, state.step), 3)
    tokens, s = searcher.ask(k_ask, state.searcher)
    res = benchmark.query(k_query, tokens)
    s, metrics = searcher.tell(k_tell, tokens, res["valid"], s)
    b = searcher.batch_size
    start = state.step * b
    h = state.history
    h = History(
        tokens=jax.lax.dynamic_update_slice(h.tokens, tokens.astype(jnp.int32), (start, 0)),
        valid=jax.lax.dynamic_update_slice(h.valid, res["valid"], (start,)),
        test=jax.lax.dynamic_update_slice(h.test, res["test"], (start,)),
        cost=jax.lax.dynamic_update_slice(h.cost, res["cost"], (start,)),
    )
    return RunState(searcher=s, history=h, step=state.step + 1), metrics


def run_steps(searcher: Searcher, benchmark, key: jax.Array, state: RunState, num_steps: int):
    """``num_steps`` steps with ``lax.scan``; returns (state, metrics[num_steps])."""

    def body(st, _):
        return search_step(searcher, benchmark, key, st)

    return jax.lax.scan(body, state, None, length=num_steps)


def make_search(searcher: Searcher):
    """``run(key, benchmark) -> History`` for one seed; ``vmap`` it over keys."""

    def run(key: jax.Array, benchmark) -> History:
        state = init_state(searcher, key)
        state, _ = run_steps(searcher, benchmark, key, state, searcher.num_steps)
        h = state.history
        q = searcher.max_queries
        return History(tokens=h.tokens[:q], valid=h.valid[:q], test=h.test[:q], cost=h.cost[:q])

    return run


def incumbent_curve(history: History) -> tuple[jax.Array, jax.Array]:
    """Best-so-far validation score and the test score of that incumbent.

    Works on one history (f32[T]) or batched ones (f32[..., T]); ties keep the
    earlier query.
    """

    def one(valid, test):
        def body(carry, x):
            best_v, best_t = carry
            v, t = x
            better = v > best_v
            carry = (jnp.where(better, v, best_v), jnp.where(better, t, best_t))
            return carry, carry

        init = (jnp.float32(-jnp.inf), jnp.float32(-jnp.inf))
        _, (bv, bt) = jax.lax.scan(body, init, (valid, test))
        return bv, bt

    f = one
    for _ in range(history.valid.ndim - 1):
        f = jax.vmap(f)
    return f(history.valid, history.test)


def make_run(searcher: Searcher, benchmark):
    """``run(key) -> History`` for one seed, closing over ``benchmark`` (PureJaxRL style).

    Many seeds: ``jax.jit(jax.vmap(make_run(s, b)))(keys)``. Closing over the
    table bakes it into the program as a constant: fine for small tables; for
    large ones (NAS-Bench-101) use ``make_search`` / ``nas.host_loop``, which
    pass the benchmark as an argument.
    """
    search = make_search(searcher)

    def run(key: jax.Array) -> History:
        return search(key, benchmark)

    return run
