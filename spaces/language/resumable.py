"""One language network trained on the host epoch by epoch, with checkpoints: the objective of a live study.

``train_epochs(trainer, config, epochs, checkpoint_dir, resume_from, seed)`` trains one architecture of
``trainer.space`` (an ``EpochTrainer``: ``make_task(name, fidelities=...)``'s trainer; ``config`` its tokens
or spec) to ``epochs`` epochs with the trainer's compiled epoch programs (``spaces.language.epoch_training``)
and returns ``{"valid", "test"}`` (the task's scores, ``-inf`` when the training diverged), ``cost`` (the
epochs it trained now) and ``resumed_from`` (the epoch it started at).

Checkpoints (``spaces.training_state``): after every epoch the state (parameters, batch statistics, Adam's
state, the no-divergence flag) is saved into ``checkpoint_dir`` with the epoch count, the canonical
architecture and the seed. Epoch ``e``'s data order and dropout masks come from ``e`` and the
architecture's key alone, so the epoch count is the whole data-order state. A call first looks for a
checkpoint of the same architecture and seed, at most ``epochs`` in, in ``checkpoint_dir`` (a restarted
trial), then in ``resume_from`` (a promotion's parent), and trains on from it: the result is bit for bit
that of training to ``epochs`` in one go (the same programs on the same numbers; tested).

``on_report(epoch, valid)`` after each epoch below ``epochs``: a True answer stops the training there
(``"pruned"`` in the result). The key is the trainer's (``Trainer.training_key(canonical, seed)``), as in the
compiled task's evaluation.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from spaces.language.epoch_training import EpochTrainer
from spaces.training_state import latest_state, save_state


def train_epochs(
    trainer: EpochTrainer,
    config,
    epochs: int,
    checkpoint_dir: str | None = None,
    resume_from: str | None = None,
    seed: int = 0,
    on_report: Callable[[int, float], bool] | None = None,
) -> dict:
    """Trains ``config`` to ``epochs`` epochs, resuming from a checkpoint where there is one (module docstring)."""
    if not isinstance(trainer, EpochTrainer):
        raise TypeError("train_epochs needs an EpochTrainer: make the task with make_task(name, fidelities=(...))")
    epochs = int(epochs)
    tokens = np.asarray(trainer.space.from_spec(config) if not isinstance(config, np.ndarray) else config, np.int32)
    plan = trainer.plan_of_tokens(tokens)
    if plan is None or epochs < 1:
        raise ValueError(f"{config!r} is not a valid architecture of {trainer.space.name}" if plan is None else
                         f"epochs must be a positive number, got {epochs}")  # fmt: skip
    canon = trainer.canonical(tokens)
    init, epoch, score = trainer.epoch_programs(plan)
    traced = jnp.asarray(plan.traced_vector)
    key = jnp.asarray(trainer.training_key(canon, seed), jnp.uint32)
    x_tr, y_tr, x_va, y_va, x_te, y_te = trainer._arrays
    fresh = init(key, traced, x_tr)
    ident = {"space": trainer.space.name, "tokens": list(canon), "seed": int(seed)}
    found = latest_state([checkpoint_dir, resume_from], fresh,
                         lambda m: {k: m.get(k) for k in ident} == ident and m.get("epochs", -1) <= epochs)  # fmt: skip
    state, start = (found[0], int(found[1]["epochs"])) if found else (fresh, 0)
    res = jax.device_get(score(traced, state, x_va, y_va, x_te, y_te)) if start >= epochs else None
    for e in range(start, epochs):
        state = epoch(key, traced, state, jnp.int32(e), x_tr, y_tr)
        res = jax.device_get(score(traced, state, x_va, y_va, x_te, y_te))
        if checkpoint_dir is not None:
            save_state(checkpoint_dir, state, {**ident, "epochs": e + 1})
        if on_report is not None and e + 1 < epochs and on_report(e + 1, float(res["valid"])):
            return {"valid": float(res["valid"]), "test": float(res["test"]), "cost": float(e + 1 - start),
                    "resumed_from": start, "epochs": e + 1, "pruned": True}  # fmt: skip
    return {"valid": float(res["valid"]), "test": float(res["test"]), "cost": float(epochs - start),
            "resumed_from": start, "epochs": epochs, "pruned": False}  # fmt: skip
