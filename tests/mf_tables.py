"""Hand-made tables with fidelities for the multi-fidelity tests (not benchmark data: their values are
formulas chosen so that the rankings at the fidelities differ), and a Python replica of the engine."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np

from nas.engine.multi_fidelity_runner import charged_resource
from nas.engine.runner import INIT_FOLD
from spaces.base import CategoricalSpace
from spaces.benchmarks.registry import available_benchmarks, register_benchmark
from spaces.benchmarks.tabular import TabularBenchmark

SPACE = CategoricalSpace("toy_mf3", {"a": list(range(5)), "b": list(range(5)), "c": list(range(5))})
BUDGETS = (1.0, 3.0, 9.0)
PAPER_BUDGETS = (1.0, 3.0, 9.0, 27.0, 81.0)


def score(tokens, budget: float) -> float:
    """A hand-made validation score: the ranking changes with the budget."""
    a, b, c = tokens
    return float((7 * a + 3 * b + c) % 11 + (a * budget) % 5 + budget / 10)


def toy_table(budgets=BUDGETS, continues: bool = False) -> TabularBenchmark:
    """125 strings; valid = ``score``, test = valid + 1, cost (seconds) = budget * (1 + a), metric size = 1 + b + c."""
    table = {}
    for t in itertools.product(range(5), repeat=3):
        table[t] = {
            "valid": [score(t, f) for f in budgets],
            "test": [score(t, f) + 1.0 for f in budgets],
            "cost": [f * (1 + t[0]) for f in budgets],
            "size": float(1 + t[1] + t[2]),  # a metric of the configuration, for multi-objective searchers
        }
    bench = TabularBenchmark.from_dict(
        name="test/toy_mf", space=SPACE, table=table, fidelities=budgets, fidelity_unit="epochs",
        metrics=[("size", "units")],
    )  # fmt: skip
    return bench.replace(continues=continues)


if "test/toy_mf" not in available_benchmarks():
    register_benchmark("test/toy_mf", lambda protocol="mean": toy_table())


def python_engine(searcher, bench, key) -> dict[str, np.ndarray]:
    """The engine (``nas.engine.multi_fidelity_runner``) re-played step by step with jit'ed ``init/ask/tell``:
    the same keys, worker order, clock (float32) and budget rule. Returns the finished evaluations in
    arrival order (tokens, fidelity, score, finish, and ``told``: how many results the searcher had been told
    when it asked for that evaluation), and ``dispatched``: every job as asked, (tokens, fidelity, parent)."""
    ask, tell, query = jax.jit(searcher.ask), jax.jit(searcher.tell), jax.jit(bench.query)
    state = jax.jit(searcher.init)(jax.random.fold_in(key, INIT_FOLD))
    w_count, f32 = searcher.workers, np.float32
    running: list = [None] * w_count  # (job, finish, valid, results told before the ask)
    res_size = [0.0] * w_count  # each running job's metric
    clock, spent, rows, dispatched = f32(0), f32(0), [], []
    for t in range(searcher.num_steps):
        k_ask, k_query, k_tell = jax.random.split(jax.random.fold_in(key, t), 3)
        while any(r is None for r in running) and spent < f32(searcher.max_resource):
            w = running.index(None)
            job, state = ask(jax.random.fold_in(k_ask, w), state)
            if not bool(job.ok):
                break
            dispatched.append((tuple(np.asarray(job.tokens).tolist()), int(job.fidelity), int(job.parent)))
            res = query(k_query, job.tokens[None], job.fidelity[None])
            charge = f32(charged_resource(searcher.budgets, job.fidelity, job.parent, bench.continues))
            cost = f32(res["cost"][0])
            if bench.continues:  # a continued training takes its part of the time
                cost = cost * charge / f32(searcher.budgets[int(job.fidelity)])
            running[w] = (job, f32(clock + cost), f32(res["valid"][0]), len(rows))
            res_size[w] = res["size"][0]
            spent = f32(spent + charge)
        busy = [i for i, r in enumerate(running) if r is not None]
        if not busy:
            continue
        w = min(busy, key=lambda i: (running[i][1], i))
        job, finish, valid, told = running[w]
        running[w], clock = None, finish
        value = jnp.float32(valid)
        if searcher.num_objectives > 1:  # a multi-objective searcher: (valid, -size), as the engine tells it
            value = jnp.asarray([valid, -float(res_size[w])], jnp.float32)
        state, metrics = tell(k_tell, job, value, state)
        assert all(np.ndim(v) == 0 for v in metrics.values()), "metrics must be scalars"
        rows.append((np.asarray(job.tokens), int(job.fidelity), valid, finish, told))
    return {
        "tokens": np.stack([r[0] for r in rows]),
        "fidelity": np.asarray([r[1] for r in rows]),
        "score": np.asarray([r[2] for r in rows], np.float32),
        "finish": np.asarray([r[3] for r in rows], np.float32),
        "told": np.asarray([r[4] for r in rows]),
        "dispatched": dispatched,
    }
