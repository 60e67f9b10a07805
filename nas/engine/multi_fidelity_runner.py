"""The multi-fidelity engine: W simulated workers, results told as they finish, budget in compute.

``make_mf_search(searcher) -> run(key, objective) -> MFHistory`` runs a multi-fidelity searcher
(``nas.core.multi_fidelity``) as one ``lax.scan``; ``jax.jit(jax.vmap(run, in_axes=(0, None)))``
runs many seeds. It simulates ``workers`` evaluations in parallel against a clock, as Syne Tune's
simulator backend does with tabulated costs, but inside the compiled program:

- Step ``t`` first fills the idle workers, in order: each asks the searcher for a job while the
  resource spent is below the budget (``max_queries`` full evaluations) and the searcher has one
  (``job.ok``); the new jobs are evaluated at once (one batched ``objective.query`` at their
  fidelities) and each worker is busy until ``clock + cost``.
- Then the earliest-finishing busy worker completes: the clock moves to its finish time, the
  searcher is told its score, and it becomes row ``t`` of the history. So the history is in the
  order results arrive, and the step count is the number of finished evaluations.

Charges: an evaluation at fidelity ``f`` spends ``fidelities[f]`` resource and its ``cost`` of
simulated time; a promotion from fidelity ``g`` on an objective that ``continues`` spends
``fidelities[f] - fidelities[g]`` and the same fraction of its cost. A continuing objective is
queried with one key per run, so a configuration's trainings at every fidelity share their seed and
a promotion continues the same training; other objectives get a key per step, as in
``nas.engine.runner``. Step ``t`` uses ``fold_in(key, t)``, so chunking and resuming never change
numbers. One worker makes the run sequential.

Rows after the last finished evaluation (the budget spent, every worker idle) keep ``score`` and
``report_score`` ``-inf``, ``fidelity`` ``-1`` and zero charges.

Metrics (``nas.engine.runner``): ``make_mf_search(searcher, metrics=(...))`` records those metrics of
every evaluation (``MFHistory.metrics``) and tells a multi-objective searcher the vector ``[valid,
-metric, ...]`` of each result; without metrics nothing changes.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from nas.core.multi_fidelity import Job, MultiFidelitySearcher
from nas.engine.compile_policy import prepare_compile
from nas.engine.runner import INIT_FOLD, told_scores
from spaces.benchmarks.metrics import missing_metrics

QUERY_FOLD = 0x7FFFFFFE  # a continuing objective's one query key per run: fold_in(key, QUERY_FOLD)


@struct.dataclass
class MFHistory:
    """Every finished evaluation of a run, in the order the results arrived (a leading seed axis when batched)."""

    tokens: jax.Array  # int32[..., E, N]
    fidelity: jax.Array  # int32[..., E]: fidelity index, -1 for rows after the last evaluation
    score: jax.Array  # f32[..., E]: what the searcher was told (validation, -inf = failed)
    report_score: jax.Array  # f32[..., E]: what reports use (test, or validation without a test split)
    cost: jax.Array  # f32[..., E]: simulated time the evaluation took (its cost, or the continued part)
    resource: jax.Array  # f32[..., E]: budget units charged
    finish: jax.Array  # f32[..., E]: the simulated clock when the result arrived
    metrics: dict = struct.field(default_factory=dict)  # name -> f32[..., E], the metrics the run records


@struct.dataclass
class Workers:
    """The evaluations running now, one slot per worker (results are computed at dispatch, told at finish)."""

    job: Job  # [W]
    busy: jax.Array  # bool[W]
    finish: jax.Array  # f32[W]
    valid: jax.Array  # f32[W]
    test: jax.Array  # f32[W]
    cost: jax.Array  # f32[W]
    resource: jax.Array  # f32[W]
    metrics: dict = struct.field(default_factory=dict)  # name -> f32[W], the recorded metrics of each job


@struct.dataclass
class MFRunState:
    searcher: object
    workers: Workers
    history: MFHistory
    clock: jax.Array  # f32[]
    spent: jax.Array  # f32[]: resource of every dispatched evaluation
    step: jax.Array  # int32[]


def empty_mf_history(searcher: MultiFidelitySearcher, metrics: tuple[str, ...] = ()) -> MFHistory:
    e, n = searcher.max_evaluations, searcher.space.num_tokens
    zeros = jnp.zeros((e,), jnp.float32)
    return MFHistory(
        tokens=jnp.zeros((e, n), jnp.int32), fidelity=jnp.full((e,), -1, jnp.int32),
        score=jnp.full((e,), -jnp.inf, jnp.float32), report_score=jnp.full((e,), -jnp.inf, jnp.float32),
        cost=zeros, resource=zeros, finish=zeros, metrics=missing_metrics(tuple(metrics), e),
    )  # fmt: skip


def idle_workers(searcher: MultiFidelitySearcher, metrics: tuple[str, ...] = ()) -> Workers:
    w, n = searcher.workers, searcher.space.num_tokens
    zeros = jnp.zeros((w,), jnp.float32)
    job = Job(
        tokens=jnp.zeros((w, n), jnp.int32), fidelity=jnp.full((w,), -1, jnp.int32),
        parent=jnp.full((w,), -1, jnp.int32), ok=jnp.zeros((w,), bool),
    )  # fmt: skip
    return Workers(job=job, busy=jnp.zeros((w,), bool), finish=zeros, valid=zeros, test=zeros, cost=zeros,
                   resource=zeros, metrics=missing_metrics(tuple(metrics), w))  # fmt: skip


def mf_init_state(searcher: MultiFidelitySearcher, key: jax.Array, metrics: tuple[str, ...] = ()) -> MFRunState:
    return MFRunState(
        searcher=searcher.init(jax.random.fold_in(key, INIT_FOLD)),
        workers=idle_workers(searcher, metrics),
        history=empty_mf_history(searcher, metrics),
        clock=jnp.float32(0.0),
        spent=jnp.float32(0.0),
        step=jnp.int32(0),
    )


def charged_resource(budgets, fidelity, parent, continues: bool):
    """Resource an evaluation spends: its budget, or the difference to its parent's when it continues."""
    b = jnp.asarray(budgets, jnp.float32)
    full = b[jnp.clip(fidelity, 0, len(budgets) - 1)]
    if not continues:
        return full
    return full - jnp.where(parent >= 0, b[jnp.clip(parent, 0, len(budgets) - 1)], 0.0)


def _select(pred, new, old):
    return jax.tree.map(lambda a, b: jnp.where(pred, a, b), new, old)


def _query(objective, key, job: Job, num_fidelities: int):
    """The workers' jobs at their fidelities; an objective without fidelities is queried plainly."""
    if not getattr(objective, "fidelities", ()):
        if num_fidelities != 1:
            raise ValueError(
                f"{getattr(objective, 'name', 'the objective')} has no fidelities, but the searcher was built "
                f"for {num_fidelities}; build it with the objective's fidelities"
            )
        return objective.query(key, job.tokens)
    if len(objective.fidelities) != num_fidelities:
        raise ValueError(
            f"{objective.name} has fidelities {tuple(objective.fidelities)}, the searcher was built for "
            f"{num_fidelities}; build it with the objective's fidelities"
        )
    return objective.query(key, job.tokens, job.fidelity)


def fill_workers(
    searcher: MultiFidelitySearcher, objective, k_ask: jax.Array, k_query: jax.Array, state: MFRunState
) -> MFRunState:
    """Asks a job for each idle worker (in order, while budget and jobs last) and evaluates the new ones.

    A loop over the idle workers, not over all ``W``: a busy worker costs no ``ask`` (under ``vmap`` the
    loop runs as many trips as the seed with the most idle workers, usually one: one result per step)."""
    continues = bool(getattr(objective, "continues", False))

    def can_ask(carry):
        _, wk, spent, blocked, _ = carry
        return jnp.any(~wk.busy) & (spent < searcher.max_resource) & ~blocked

    def ask_one(carry, pred=None):
        s, wk, spent, blocked, new = carry
        w = jnp.argmax(~wk.busy)  # the idle worker with the lowest index
        k_w = jax.random.fold_in(k_ask, w)
        if pred is None:  # inside the loop: every trip asks (a no-job ask may still update the state)
            job, s = searcher.ask(k_w, s)
            pred = jnp.bool_(True)
        else:
            job, s = searcher.ask_if(k_w, s, pred)
        take = job.ok & pred
        res = charged_resource(searcher.budgets, job.fidelity, job.parent, continues)
        job_w = jax.tree.map(lambda x: x[w], wk.job)
        wk = wk.replace(
            job=jax.tree.map(lambda all_, one: all_.at[w].set(one), wk.job, _select(take, job, job_w)),
            busy=wk.busy.at[w].set(wk.busy[w] | take),
            resource=wk.resource.at[w].set(jnp.where(take, res, wk.resource[w])),
        )
        blocked = blocked | (pred & ~job.ok)
        return s, wk, spent + jnp.where(take, res, 0.0), blocked, new.at[w].set(new[w] | take)

    init = (state.searcher, state.workers, state.spent, jnp.bool_(False), jnp.zeros((searcher.workers,), bool))
    # the first ask outside the loop, masked: under vmap a loop trip selects between the old and new carry
    # for every seed, a pass over the whole searcher state; most steps need one ask (one result came in)
    first = ask_one(init, can_ask(init))
    s, wk, spent, _, new = jax.lax.while_loop(can_ask, ask_one, first)
    jobs = wk.job.replace(fidelity=jnp.where(new, wk.job.fidelity, -1))  # old rows: fidelity -1 (cheap, masked)
    res = _query(objective, k_query, jobs, searcher.num_fidelities)
    cost = res["cost"]
    if continues:  # a continued training takes its part of the time
        full = jnp.asarray(searcher.budgets, jnp.float32)[jnp.clip(wk.job.fidelity, 0, searcher.num_fidelities - 1)]
        cost = cost * wk.resource / full
    wk = wk.replace(
        finish=jnp.where(new, state.clock + cost, wk.finish),
        valid=jnp.where(new, res["valid"], wk.valid),
        test=jnp.where(new, res["test"], wk.test),
        cost=jnp.where(new, cost, wk.cost),
        metrics={k: jnp.where(new, res[k], v) for k, v in wk.metrics.items()},
    )
    return state.replace(searcher=s, workers=wk, spent=spent)


def complete_next(
    searcher: MultiFidelitySearcher, key: jax.Array, state: MFRunState, objective=None, metrics: tuple[str, ...] = ()
) -> tuple[MFRunState, dict]:
    """The earliest-finishing busy worker's result is told and recorded as history row ``state.step``
    (``objective``, ``metrics``: what a multi-objective searcher is told, ``nas.engine.runner.told_scores``)."""
    wk = state.workers
    w = jnp.argmin(jnp.where(wk.busy, wk.finish, jnp.inf))
    any_busy = jnp.any(wk.busy)
    job = jax.tree.map(lambda x: x[w], wk.job)
    result = {"valid": wk.valid[w][None], **{k: v[w][None] for k, v in wk.metrics.items()}}
    score = wk.valid[w] if searcher.num_objectives == 1 else told_scores(searcher, result, objective, metrics)[0]
    s, metrics = searcher.tell_if(key, job, score, state.searcher, any_busy)
    h, t = state.history, state.step
    row = {
        "tokens": job.tokens, "fidelity": job.fidelity, "score": wk.valid[w], "report_score": wk.test[w],
        "cost": wk.cost[w], "resource": wk.resource[w], "finish": wk.finish[w],
    }  # fmt: skip
    h = h.replace(**{k: getattr(h, k).at[t].set(jnp.where(any_busy, v, getattr(h, k)[t])) for k, v in row.items()})
    h = h.replace(metrics={k: v.at[t].set(jnp.where(any_busy, wk.metrics[k][w], v[t])) for k, v in h.metrics.items()})
    clock = jnp.where(any_busy, wk.finish[w], state.clock)
    wk = wk.replace(busy=wk.busy.at[w].set(wk.busy[w] & ~any_busy))
    metrics = {**metrics, "spent": state.spent, "clock": clock}
    return state.replace(searcher=s, workers=wk, history=h, clock=clock, step=t + 1), metrics


def mf_search_step(searcher: MultiFidelitySearcher, objective, key: jax.Array, state: MFRunState, metrics=()):
    """One engine step (module docstring); its keys depend only on ``(key, state.step)``."""
    k_ask, k_query, k_tell = jax.random.split(jax.random.fold_in(key, state.step), 3)
    if getattr(objective, "continues", False):  # one training seed per configuration and run
        k_query = jax.random.fold_in(key, QUERY_FOLD)
    state = fill_workers(searcher, objective, k_ask, k_query, state)
    return complete_next(searcher, k_tell, state, objective, tuple(metrics))


def mf_run_steps(
    searcher: MultiFidelitySearcher, objective, key: jax.Array, state: MFRunState, num_steps: int, metrics=()
):
    """``num_steps`` engine steps with ``lax.scan``; returns (state, metrics[num_steps]). The recorded metrics
    are those ``state`` was built with (``mf_init_state(..., metrics)``; ``metrics`` must name the same)."""
    if tuple(sorted(metrics)) != tuple(sorted(state.workers.metrics)):
        raise ValueError(f"the run state records metrics {sorted(state.workers.metrics)}, not {list(metrics)}")

    def body(st, _):
        return mf_search_step(searcher, objective, key, st, metrics)

    return jax.lax.scan(body, state, None, length=num_steps)


def make_mf_search(searcher: MultiFidelitySearcher, metrics: tuple[str, ...] = ()):
    """``run(key, objective) -> MFHistory`` for one seed; ``vmap`` it over keys (``metrics``: to record)."""
    prepare_compile()  # the engine's lowering of JAX's random bits, before the run is traced

    def run(key: jax.Array, objective) -> MFHistory:
        state = mf_init_state(searcher, key, tuple(metrics))
        state, _ = mf_run_steps(searcher, objective, key, state, searcher.num_steps, metrics)
        return state.history

    return run
