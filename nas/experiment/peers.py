"""Peer baselines: other libraries' searchers on our objectives, from a Python loop.

Our searchers are compiled (``lax.scan`` over steps, ``vmap`` over seeds). A
*peer* is a searcher of another library that proposes one configuration at a
time from Python; ``run_peer`` runs it on any objective of the contract
(``spaces.benchmarks.objective``) and returns the ``nas.engine.runner.History`` of our
searchers, so a comparison table shows it beside them. Registered peers:

- ``tpe``: Optuna's tree-structured Parzen estimator (``TPESampler``; Bergstra
  et al., 2011, "Algorithms for Hyper-Parameter Optimization", the TPE of the
  ReMAADE paper's Table III and Section VIII; ``nas.experiment.tpe_peer``). Optuna is optional:
  ``pip install optuna`` (requirements-dev.txt).
- ``syne_tune``: Syne Tune's ASHA and asynchronous Hyperband in Syne Tune's simulator, on objectives
  with fidelities; it returns the ``MFHistory`` of our multi-fidelity searchers
  (``nas.experiment.syne_tune_peer``, which says how it is run).
- ``optuna_mo`` and ``syne_tune_morea``: Optuna's ``NSGAIISampler`` and multi-objective ``TPESampler``,
  and Syne Tune's multi-objective regularized evolution, on the score and the run's metrics
  (``nas.experiment.mo_peers``). Run with ``metrics=(...)``, a multi-objective peer is told the vector
  ``[valid, +-metric, ...]`` (every component maximized, ``spaces.benchmarks.metrics``) under the
  protocol below; any peer's history records the named metrics.

Each peer is a ``nas.experiment.peer_base.Peer`` class registered in its own module; importing this
one imports them all, so ``PEERS`` here is the full registry (``nas.experiment.registry`` reads it
beside the compiled searchers').

The rest of this docstring is the ``tpe`` protocol, identical to our searchers' (``nas.engine.runner``):

- Seed ``s`` (key ``k_s``) sends its ``t``-th query with the key of runner step
  ``t`` at batch size 1, ``split(fold_in(k_s, t), 3)[1]``; the peer's own RNG is
  seeded from ``fold_in(k_s, INIT_FOLD)``. Each seed's ``t``-th proposal depends only on its own
  first ``t - 1`` results (per-seed sequential). For speed the seeds of a group
  run in lockstep: each proposes one configuration (host), then one jitted,
  vmapped ``objective.query`` scores the group's configurations at once (what
  the compiled runner does for ``vmap`` over seeds).
- Never re-query (DESIGN.md): the budget counts distinct configurations
  (``space.string_id``; inactive hyperparameters ignored). Optuna's TPE may
  propose a configuration it has already evaluated (its Parzen estimators draw
  categorical values again); such a proposal is not queried: the peer is told
  it as a failed trial (Optuna's TPE leaves failed trials out of its Parzen
  estimators, so its model sees each configuration once) and asked again.
  After ``max_repeats`` repeated proposals in a row an unseen configuration is
  queried instead, handed to the peer as its next trial (Optuna's
  ``enqueue_trial``): with ``fallback="mutate"`` (default) the peer's last
  proposal with one active hyperparameter changed (``space.mutate``; mutated
  again until unseen), with ``fallback="uniform"`` a uniform draw
  (``space.sample``), as our searchers' fallback (``nas.core.dedup.fill_unique``).
  ``repeats="requery"`` is pure Optuna instead: every proposal is queried, a repeat
  too (the objective evaluated again, as ``study.optimize`` would: the same value
  on a table's seed mean, a new training or seed draw otherwise), and told as a
  completed trial; the budget then counts trials, not distinct configurations,
  and ``repeated_queries`` in the summary counts the repeats.
  With few "good" trials TPE's Parzen estimator is peaked and its argmax over
  candidates is the incumbent, so on a grid it re-proposes it often (on the
  Section VIII space half to two thirds of its proposals after startup): a uniform fallback
  turns much of its budget into random search, a mutation keeps it near its own
  proposal. Invalid strings (``string_id < 0``) are told as
  failed trials. Counts of both go into the metrics.

Checkpoints (every peer): ``ckpt_path`` holds the finished groups of seeds (``seeds_per_group``);
a rerun skips them and gives identical numbers. Progress: the TPE peer's query program is
compiled ahead under a ``compiling <label> ...`` line, and the bar is redrawn after every
query of a group (a group of TPE seeds can take minutes on a training objective); the
Syne Tune peer after every group (a seed takes a fraction of a second on a table).
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from nas.core.options import SearcherOptions, check_option_names
from nas.engine import checkpoint
from nas.engine.chunked_loop import evaluations_done, incumbent_stats, show_progress
from nas.engine.incumbent import top_fidelity_score
from nas.engine.multi_fidelity_runner import MFHistory
from nas.engine.program_cache import compile_ahead
from nas.engine.runner import INIT_FOLD, History
from nas.experiment import mo_peers, peer_base, syne_tune_peer, tpe_peer  # noqa: F401  (each registers its peers)
from nas.experiment.peer_base import HostPeerOptions, Peer
from nas.experiment.tpe_peer import TPEOptions, TPEProposer, import_optuna, ordinal_tokens
from spaces.base import Space
from spaces.benchmarks.metrics import objective_vector
from spaces.names import lookup

__all__ = ["PEERS", "available_peers", "make_peer_options", "make_peer", "run_peer", "run_group", "Peer",
           "HostPeerOptions", "TPEOptions", "TPEProposer", "import_optuna", "ordinal_tokens"]  # fmt: skip

FALLBACK_FOLD = 0x5EED0000  # fallback draws use fold_in(k_s, FALLBACK_FOLD + t)


PEERS: dict[str, type[Peer]] = peer_base.PEERS  # every peer: the modules imported above registered theirs


def available_peers() -> list[str]:
    return sorted(PEERS)


def make_peer_options(name: str, **options) -> SearcherOptions:
    cls = lookup("peer", name, PEERS).Options
    return cls(**check_option_names(name, cls, options))


def make_peer(name: str, space: Space, **options) -> Peer:
    return lookup("peer", name, PEERS)(space, make_peer_options(name, **options))


@jax.jit
def query_keys(keys: jax.Array, t: jax.Array) -> jax.Array:
    """Each seed's query key of runner step ``t`` (``nas.engine.runner.search_step``)."""
    return jax.vmap(lambda k: jax.random.split(jax.random.fold_in(k, t), 3)[1])(keys)


@jax.jit
def vmapped_query(objective, keys: jax.Array, tokens: jax.Array) -> dict:
    """Each seed's ``objective.query(keys[s], tokens[s])`` (``tokens[G, 1, N]``) in one program."""
    return jax.vmap(objective.query)(keys, tokens)


@functools.lru_cache(maxsize=16)
def host_functions(space: Space) -> tuple[Callable, Callable]:
    """Jitted ``string_id``, ``sample`` and ``mutate`` of ``space`` (compiled once per space)."""
    return jax.jit(space.string_id), jax.jit(space.sample), jax.jit(space.mutate)


def host_programs(peer: Peer, objective, keys: jax.Array) -> list[tuple[Callable, tuple]]:
    """The compiled programs ``run_group`` calls on ``keys``, with example arguments (``compile_ahead``)."""
    n = peer.space.num_tokens
    sid, sample, mutate = host_functions(peer.space)
    tokens = jnp.zeros((n,), jnp.int32)
    return [
        (vmapped_query, (objective, keys, jnp.zeros((keys.shape[0], 1, n), jnp.int32))),
        (query_keys, (keys, 0)),
        (sid, (tokens,)),
        (sample, (keys[0],)),
        (mutate, (keys[0], tokens)),
    ]


def run_group(
    peer: Peer, keys: jax.Array, query: Callable, on_query: Callable[[int], None] | None = None,
    metrics: tuple[str, ...] = (), told: Callable[[dict], np.ndarray] | None = None,
) -> tuple[dict, dict]:  # fmt: skip
    """Lockstep run of ``len(keys)`` seeds: history arrays ``[G, Q, ...]`` and mean repeat/fallback counts;
    ``on_query(t)`` after the group's ``t``-th query (progress). ``metrics``: recorded (``metric.<name>``);
    ``told(res) -> f64[G] or f64[G, M]``: what each seed's peer is told (default ``res["valid"]``); a row
    with a non-finite value is told as a failed trial."""
    space, q, g = peer.space, peer.max_queries, keys.shape[0]
    sid, sample, mutate = host_functions(space)
    props = [peer.proposer(jax.random.fold_in(k, INIT_FOLD)) for k in keys]
    seen: list[dict[int, float]] = [{} for _ in range(g)]
    out = {
        "tokens": np.zeros((g, q, space.num_tokens), np.int32),
        "score": np.zeros((g, q), np.float32),
        "report_score": np.zeros((g, q), np.float32),
        "cost": np.zeros((g, q), np.float32),
        **{METRIC + n: np.zeros((g, q), np.float32) for n in metrics},
    }
    repeats, fallbacks = np.zeros(g), np.zeros(g)
    for t in range(q):
        trials = []
        for s, prop in enumerate(props):
            if peer.options.repeats == "requery":  # pure Optuna: query whatever it proposes
                trial, tokens = prop.ask()
                i = int(sid(tokens))
                repeats[s] += i in seen[s]
                trials.append((trial, tokens, i))
                continue
            for _ in range(peer.options.max_repeats):
                trial, tokens = prop.ask()
                i = int(sid(tokens))
                if i >= 0 and i not in seen[s]:
                    break
                if hasattr(prop, "reject"):  # a peer without failed trials drops the proposal
                    prop.reject(trial)
                else:
                    prop.tell(trial, None)  # a failed trial, which TPE ignores
                repeats[s] += 1
            else:  # the peer keeps proposing evaluated configurations: an unseen one instead (TPEOptions.fallback)
                fallbacks[s] += 1
                k = jax.random.fold_in(keys[s], FALLBACK_FOLD + t)
                start = tokens
                for r in range(10_000):
                    kr = jax.random.fold_in(k, r)
                    if peer.options.fallback == "mutate" and r < 1000:  # edits accumulate: a walk from the proposal
                        tokens = np.asarray(mutate(kr, jnp.asarray(tokens if r % 10 else start)))
                    else:
                        tokens = np.asarray(sample(kr))
                    i = int(sid(tokens))
                    if i >= 0 and i not in seen[s]:
                        break
                else:
                    raise RuntimeError(f"{space.name}: no unseen configuration found; is the space exhausted?")
                trial, tokens = prop.ask_fixed(tokens)
            trials.append((trial, tokens, i))
        toks = np.stack([tk for _, tk, _ in trials])[:, None, :]
        res = jax.tree_util.tree_map(np.asarray, query(query_keys(keys, t), jnp.asarray(toks)))
        values = res["valid"][:, 0] if told is None else told({k: v[:, 0] for k, v in res.items()})
        for s, (trial, tokens, i) in enumerate(trials):
            v = float(res["valid"][s, 0])
            seen[s][i] = v
            value = np.asarray(values[s], np.float64)
            ok = bool(np.all(np.isfinite(value)))
            props[s].tell(trial, (float(value) if value.ndim == 0 else value.tolist()) if ok or told is None else None)
            out["tokens"][s, t] = tokens
            for k_out, k_res in (("score", "valid"), ("report_score", "test"), ("cost", "cost")):
                out[k_out][s, t] = res[k_res][s, 0]
            for n in metrics:
                out[METRIC + n][s, t] = res[n][s, 0]
        if on_query is not None:
            on_query(t + 1)
    return out, {"repeats": float(repeats.mean()), "fallbacks": float(fallbacks.mean())}


def history_arrays(peer: Peer, seeds: int) -> dict[str, np.ndarray]:
    """Host arrays of the peer's history, ``[seeds, rows, ...]``: ``History``'s, or ``MFHistory``'s."""
    if peer.multi_fidelity:
        return syne_tune_peer.empty_history(peer.space, peer.options, seeds)
    q, n = peer.max_queries, peer.space.num_tokens
    return {"tokens": np.zeros((seeds, q, n), np.int32), **{k: np.zeros((seeds, q), np.float32) for k in HISTORY[1:]}}


HISTORY = ("tokens", "score", "report_score", "cost")
METRIC = "metric."  # a recorded metric's array in the peer's state (nas.experiment.workdir)


def told_values(peer: Peer, objective, metrics: tuple[str, ...]) -> Callable[[dict], np.ndarray] | None:
    """What a multi-objective peer is told: ``[valid, +-metric...]`` of its first ``num_objectives - 1``
    metrics (``spaces.benchmarks.metrics.objective_vector``); None for a single-objective peer."""
    m = int(getattr(peer.options, "num_objectives", 1))
    if m == 1:
        return None
    if len(metrics) < m - 1:
        raise ValueError(f"{peer.registry_name} optimizes {m} objectives; the run names {len(metrics)} metrics")
    names = tuple(metrics[: m - 1])
    return lambda res: np.asarray(objective_vector(res, objective, names), np.float64)


def run_peer(
    peer: Peer,
    objective,
    keys: jax.Array,
    *,
    ckpt_path: str | None = None,
    fingerprint_extra: str = "",
    progress: bool = True,
    label: str = "",
    max_chunks: int | None = None,
    on_chunk: Callable[[dict], None] | None = None,
    report: Callable | None = None,
    chunk_steps: int = 0,
    metrics: tuple[str, ...] = (),
) -> History | MFHistory | None:
    """``run_chunked``'s contract for a peer: a chunk is a group of seeds; None when ``max_chunks`` stopped it.
    ``metrics``: the objective's metrics to record (and to tell a multi-objective peer)."""
    del chunk_steps  # a peer's unit of work is a group of seeds
    s, mf, metrics = keys.shape[0], peer.multi_fidelity, tuple(metrics)
    if mf and metrics:
        raise ValueError(f"{peer.registry_name} (multi-fidelity) does not record metrics; run it without")
    told = told_values(peer, objective, metrics)
    per = peer.options.seeds_per_group or s
    bounds = list(range(0, s, per)) + [s]
    extra = fingerprint_extra + (f" metrics={list(metrics)}" if metrics else "")
    fprint = checkpoint.run_fingerprint(peer, keys, extra)
    like = {"done": np.zeros((), np.int32), **history_arrays(peer, s),
            **{METRIC + n: np.zeros((s, peer.max_queries), np.float32) for n in metrics}}  # fmt: skip
    q = like["score"].shape[1]
    state = like if ckpt_path is None else (checkpoint.load(ckpt_path, like, fprint) or like)
    state = {k: np.array(v) for k, v in state.items()}
    name, groups = label or peer.registry_name, len(bounds) - 1
    if not mf:  # the objective an argument: tables are not baked in
        query = functools.partial(vmapped_query, objective)
    t0, done_now = time.perf_counter(), 0
    for c in range(groups):
        lo, hi = bounds[c], bounds[c + 1]
        if hi <= int(state["done"]):
            continue
        if max_chunks is not None and done_now >= max_chunks:
            return None
        if mf:
            arrays, group_metrics = syne_tune_peer.run_group(peer.space, peer.options, keys[lo:hi], objective)
        else:
            compile_ahead(host_programs(peer, objective, keys[lo:hi]), name, progress)

            def on_query(t, c=c):
                if progress:
                    show_progress(name, c, groups, t, time.perf_counter() - t0, unit="seed groups", part=t / q)

            arrays, group_metrics = run_group(peer, keys[lo:hi], query, on_query, metrics, told)
        for k, v in arrays.items():
            state[k][lo:hi] = v
        state["done"] = np.asarray(hi, np.int32)
        done_now += 1
        if on_chunk is not None:
            score = state["score"][:hi]  # a multi-fidelity run's incumbent: the best at the top fidelity
            score = top_fidelity_score(score, state["fidelity"][:hi], len(peer.options.fidelities)) if mf else score
            info = {"chunk": c + 1, "num_chunks": len(bounds) - 1, "step": c + 1, "seeds_done": hi, "queries": q}
            info.update({"elapsed_s": time.perf_counter() - t0, "metrics": group_metrics})
            has_test = getattr(objective, "has_test", True)
            info.update(incumbent_stats(score, state["report_score"][:hi], q, report, has_test))
            on_chunk(info)
        if ckpt_path is not None:
            checkpoint.save(ckpt_path, state, fprint)
        if progress:  # a multi-fidelity peer counts its evaluations (mean over the seeds run so far)
            done = evaluations_done(state["fidelity"][:hi]) if mf else q
            show_progress(name, c + 1, groups, done, time.perf_counter() - t0, unit="seed groups",
                          what="evaluations" if mf else "queries")  # fmt: skip
    sys.stderr.flush()
    if mf:
        return MFHistory(**{k: state[k] for k in HISTORY + ("fidelity", "resource", "finish")})
    return History(**{k: state[k] for k in HISTORY}, metrics={n: state[METRIC + n] for n in metrics})

