"""One ``mlp/<task>`` configuration trained on the host with checkpoints: the objective of a live study.

``train_mlp(objective, config, budget, checkpoint_dir, resume_from, seed)`` trains one configuration of
``objective.space`` (a params dict or tokens) for ``budget`` optimizer steps with the compiled objective's
own steps (``spaces.benchmarks.mlp_segment``: ``start``, ``advance``, ``scores``) and returns
``{"valid", "test"}`` (minus the RMSE, the objective's convention: higher is better, ``-inf`` when the
training diverged), ``cost`` (the steps it trained now) and ``resumed_from`` (the step it started at).

Checkpoints (``spaces.training_state``): the state after the last step (parameters, the solver's
state, the no-divergence flag, the unit mask) is saved into ``checkpoint_dir`` with its step, the
configuration and the seed; the data order needs nothing more, since step ``s`` draws its batch from
``fold_in(data key, s // chunk_steps)``. A call first looks for a checkpoint of the same configuration
and seed, at most ``budget`` steps in, in ``checkpoint_dir`` (a restarted trial), then in
``resume_from`` (a promotion's parent), and trains on from it; the result is exactly, bit for bit, that
of training to ``budget`` in one go (tested), because every call runs one compiled program whose start
and stop are arguments and nothing in a step depends on where the training stops.

``report_every=k`` scores the validation split every ``k`` steps and calls ``on_report(step, valid)``;
a True answer (``trial.should_prune()`` after ``trial.report``) stops the training there (``"pruned"``
in the result). Seeds: configuration ``c`` trains with ``fold_in(PRNGKey(seed), string_id(c))``, the key
the compiled query gives it for the query key ``PRNGKey(seed)``. The compiled objective's numbers do not
change: this module only calls its steps.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from spaces.benchmarks import mlp_segment
from spaces.benchmarks.mlp_training import MLPTraining, decode
from spaces.training_state import latest_state, save_state


@functools.partial(jax.jit, static_argnums=1)
def _start(objective, width, keys, hp):
    return mlp_segment.start(objective, width, keys, hp)


@functools.partial(jax.jit, static_argnums=1)
def _advance(objective, width, state, keys, hp, stop, begin):
    return mlp_segment.advance(objective, width, state, keys, hp, stop, begin)


@functools.partial(jax.jit, static_argnums=1)
def _scores(objective, width, state, hp):
    return mlp_segment.scores(objective, width, state, hp)


def config_tokens(space, config) -> np.ndarray:
    """Canonical tokens of ``config`` (a params dict of ``space``, or its tokens)."""
    tokens = space.from_spec(config) if isinstance(config, dict) else np.asarray(config, np.int32)
    return np.asarray(space.canonical(jnp.asarray(tokens, jnp.int32)), np.int32)


def train_mlp(
    objective: MLPTraining,
    config,
    budget: int,
    checkpoint_dir: str | None = None,
    resume_from: str | None = None,
    seed: int = 0,
    report_every: int = 0,
    on_report: Callable[[int, float], bool] | None = None,
) -> dict:
    """Trains ``config`` to ``budget`` steps, resuming from a checkpoint where there is one (module docstring)."""
    budget = int(budget)
    if budget < 1:
        raise ValueError(f"budget must be a positive number of optimizer steps, got {budget}")
    tokens = config_tokens(objective.space, config)
    sid = int(objective.space.string_id(jnp.asarray(tokens)))
    if sid < 0:
        raise ValueError(f"{config!r} is not a configuration of {objective.name}'s space")
    keys = jax.random.fold_in(jax.random.PRNGKey(int(seed)), sid)[None]
    hp = decode(objective.space, jnp.asarray(tokens)[None], objective.fixed)
    widths = objective.width_grid()
    width = widths[min(int(np.searchsorted(widths, float(hp["hidden_layer_size"][0]))), len(widths) - 1)]
    fresh = _start(objective, width, keys, hp)
    ident = {"objective": objective.name, "tokens": tokens.tolist(), "seed": int(seed)}
    found = latest_state([checkpoint_dir, resume_from], fresh,
                         lambda m: {k: m.get(k) for k in ident} == ident and m.get("step", -1) <= budget)  # fmt: skip
    state, begin = (found[0], int(found[1]["step"])) if found else (fresh, 0)
    start, out = begin, {}
    stops = list(range((begin // report_every + 1) * report_every, budget, report_every)) if report_every else []
    for stop in [*stops, budget] if begin < budget else [budget]:
        run = {**hp, "max_iter": jnp.full((1,), stop, jnp.float32)}  # steps past ``stop`` are masked
        state = _advance(objective, width, state, keys, run, jnp.int32(stop), jnp.int32(begin))
        begin = stop
        v, t, ok = (float(x[0]) for x in _scores(objective, width, state, hp))
        out = {"valid": -v if ok else -np.inf, "test": -t if ok else -np.inf}
        if checkpoint_dir is not None:
            save_state(checkpoint_dir, state, {**ident, "step": stop})
        if on_report is not None and stop < budget and on_report(stop, out["valid"]):
            return {**out, "cost": float(stop - start), "resumed_from": start, "step": stop, "pruned": True}
    return {**out, "cost": float(budget - start), "resumed_from": start, "step": budget, "pruned": False}
