"""The many-seed runner: one search run is one array program.

``make_search(searcher) -> run(key, objective) -> History`` scans
ask -> query -> tell until the searcher's query budget is spent. Step ``t``
uses keys derived with ``jax.random.fold_in(key, t)``, so a run split into
chunks (the chunked loop in ``nas.engine.chunked_loop``) gives exactly the same numbers as
one uninterrupted scan.

The objective (a table or a training task: ``query(key, tokens[B, N]) ->
{"valid", "test", "cost"}``) is an argument, a pytree, not a closure, so large
tables are not baked into the compiled program as constants.

Metrics (``spaces.benchmarks.metrics``): ``make_search(searcher, metrics=("latency",))`` records
those metrics of every query in ``History.metrics``, and a multi-objective searcher
(``num_objectives`` M > 1) is told ``objective_vector``'s ``f32[B, M]`` scores, ``[valid,
-latency, ...]``, instead of ``valid``. A run without metrics (the default) has an empty
``History.metrics``: it computes and stores exactly what it did before metrics existed.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from nas.core.contract import Searcher
from nas.engine.compile_policy import prepare_compile
from spaces.benchmarks.metrics import missing_metrics, objective_vector

INIT_FOLD = 0x7FFFFFFF  # init key = fold_in(key, INIT_FOLD); step t uses fold_in(key, t)


@struct.dataclass
class History:
    """Every query of a run, in query order (a leading seed axis when batched).

    ``score`` is what the searcher was told (the objective's ``valid``: a
    validation score, higher is better, ``-inf`` for a failed evaluation);
    ``report_score`` is what reports convert (the objective's ``test``: the test
    score, or the seed-mean validation score where the objective has no test
    split).
    """

    tokens: jax.Array  # int32[..., T, N]
    score: jax.Array  # f32[..., T]
    report_score: jax.Array  # f32[..., T]
    cost: jax.Array  # f32[..., T]
    metrics: dict = struct.field(default_factory=dict)  # name -> f32[..., T], the metrics the run records

    def first(self, q: int) -> History:
        """The first ``q`` queries (the budget, when the last batch ran past it)."""
        return History(
            tokens=self.tokens[..., :q, :], score=self.score[..., :q], report_score=self.report_score[..., :q],
            cost=self.cost[..., :q], metrics={k: v[..., :q] for k, v in self.metrics.items()},
        )  # fmt: skip


@struct.dataclass
class RunState:
    searcher: Any
    history: History
    step: jax.Array  # int32[]


def empty_history(searcher: Searcher, metrics: tuple[str, ...] = ()) -> History:
    """A run's history buffer: ``num_steps * batch_size`` rows (``NaN`` metrics until queried)."""
    total, n = searcher.num_steps * searcher.batch_size, searcher.space.num_tokens
    return History(
        tokens=jnp.zeros((total, n), jnp.int32),
        score=jnp.full((total,), -jnp.inf, jnp.float32),
        report_score=jnp.full((total,), -jnp.inf, jnp.float32),
        cost=jnp.zeros((total,), jnp.float32),
        metrics=missing_metrics(tuple(metrics), total),
    )


def init_state(searcher: Searcher, key: jax.Array, metrics: tuple[str, ...] = ()) -> RunState:
    searcher_state = searcher.init(jax.random.fold_in(key, INIT_FOLD))
    return RunState(searcher=searcher_state, history=empty_history(searcher, metrics), step=jnp.int32(0))


def told_scores(searcher: Searcher, res: dict, objective, metrics: tuple[str, ...]) -> jax.Array:
    """What ``searcher`` is told: ``valid`` (f32[B]), or for a multi-objective searcher the vector
    ``[valid, +-metrics]`` (f32[B, M], ``spaces.benchmarks.metrics.objective_vector``)."""
    m = searcher.num_objectives
    if m == 1:
        return res["valid"]
    if len(metrics) != m - 1:
        raise ValueError(
            f"{searcher.registry_name} optimizes {m} objectives (the score and {m - 1} metrics), but the run names "
            f"{len(metrics)} metrics {list(metrics)}; give it metrics=(...) with {m - 1}"
        )
    return objective_vector(res, objective, metrics)


def search_step(
    searcher: Searcher, objective, key: jax.Array, state: RunState, rows: int | None = None,
    metrics: tuple[str, ...] = (),
) -> tuple[RunState, dict]:  # fmt: skip
    """One ask/query/tell step; its keys depend only on ``(key, state.step)``.

    ``rows`` (static) < batch size: only the first ``rows`` strings of the batch
    are evaluated (a budget that is not a multiple of the batch size ends with a
    partial batch); the others are told ``-inf`` and never enter the history.
    ``metrics`` (static): the objective's metrics the run records (module docstring).
    """
    k_ask, k_query, k_tell = jax.random.split(jax.random.fold_in(key, state.step), 3)
    tokens, s = searcher.ask(k_ask, state.searcher)
    b = tokens.shape[0]
    if rows is None or rows >= b:
        res = objective.query(k_query, tokens)
    else:
        part = objective.query(k_query, tokens[:rows])
        fill = {"valid": -jnp.inf, "test": -jnp.inf, "cost": 0.0, **{k: jnp.nan for k in metrics}}
        res = {k: jnp.concatenate([part[k], jnp.full((b - rows,), fill[k], part[k].dtype)]) for k in fill}
    s, metrics_out = searcher.tell(k_tell, tokens, told_scores(searcher, res, objective, metrics), s)
    start = state.step * searcher.batch_size
    h = state.history

    def put(buf, new):
        return jax.lax.dynamic_update_slice(buf, new.astype(buf.dtype), (start,) + (0,) * (buf.ndim - 1))

    h = History(
        tokens=put(h.tokens, tokens),
        score=put(h.score, res["valid"]),
        report_score=put(h.report_score, res["test"]),
        cost=put(h.cost, res["cost"]),
        metrics={k: put(h.metrics[k], res[k]) for k in metrics},
    )
    return RunState(searcher=s, history=h, step=state.step + 1), metrics_out


def run_steps(
    searcher: Searcher, objective, key: jax.Array, state: RunState, num_steps: int, rows: int | None = None,
    metrics: tuple[str, ...] = (),
):  # fmt: skip
    """``num_steps`` steps with ``lax.scan``; returns (state, metrics[num_steps]). ``rows``, ``metrics``: see
    ``search_step``."""

    def body(st, _):
        return search_step(searcher, objective, key, st, rows, metrics)

    return jax.lax.scan(body, state, None, length=num_steps)


def last_batch_rows(searcher: Searcher) -> int | None:
    """Strings evaluated by the last step when the budget is not a multiple of the batch size, else None."""
    rest = searcher.max_queries % searcher.batch_size
    return rest or None


def make_search(searcher: Searcher, metrics: tuple[str, ...] = ()):
    """``run(key, objective) -> History`` for one seed; ``vmap`` it over keys.

    The run evaluates exactly ``max_queries`` strings: a last partial batch when
    the budget is not a multiple of the batch size. ``metrics``: the objective's
    metrics to record (and to tell a multi-objective searcher), in order.
    """
    metrics = tuple(metrics)
    prepare_compile()  # the engine's lowering of JAX's random bits, before the run is traced

    def run(key: jax.Array, objective) -> History:
        state = init_state(searcher, key, metrics)
        rows = last_batch_rows(searcher)
        full = searcher.num_steps - (rows is not None)
        state, _ = run_steps(searcher, objective, key, state, full, metrics=metrics)
        if rows is not None:
            state, _ = run_steps(searcher, objective, key, state, 1, rows, metrics)
        return state.history.first(searcher.max_queries)

    return run


def make_run(searcher: Searcher, objective):
    """``run(key) -> History`` for one seed, closing over ``objective`` (PureJaxRL style).

    Many seeds: ``jax.jit(jax.vmap(make_run(s, b)))(keys)``. Closing over a
    table bakes it into the program as a constant: fine for small tables; for
    large ones (NAS-Bench-101) use ``make_search`` / ``nas.engine.chunked_loop``, which
    pass the objective as an argument.
    """
    search = make_search(searcher)

    def run(key: jax.Array) -> History:
        return search(key, objective)

    return run
