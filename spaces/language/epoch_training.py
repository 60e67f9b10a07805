"""Training language networks epoch by epoch: epochs as the fidelity, promotions that continue.

``EpochTrainer(space, data, cfg, fidelities)`` evaluates a configuration after ``fidelities[f]``
epochs (``evaluate(tokens, seeds, fidelity, parent)``). It trains one configuration at a time with
three compiled programs per network signature (``training.CandidateTraining``): initialize, run ONE
epoch from a state (the epoch index is an argument), and score. Training for ``E`` epochs is ``E``
calls of the epoch program, so:

- a promotion continues exactly: the state after ``E1`` epochs (parameters, batch statistics, Adam's
  state, the no-divergence flag) is kept on the device, and training on from it to ``E2`` runs the
  same calls, on the same numbers, as training to ``E2`` from scratch (the step size is constant and
  epoch ``e``'s data order and dropout masks depend on ``e`` only); its ``cost`` is the wall time of
  the ``E2 - E1`` epochs it trains (compilation excluded, as ``training.Trainer``);
- an evaluation whose ``parent`` (the fidelity index it continues, as ``nas.core.multi_fidelity.Job``)
  has no kept state trains from scratch, as one with ``parent = -1``.

Numbers at ``E`` epochs are guaranteed to agree with the fused single-fidelity program
(``training.make_train_fn``) only up to float rounding: the compiled programs differ. Results are
memoized per (canonical string, seed, epochs); states are kept for at most ``max_states``
configurations (least recently used first out) and never at the top fidelity, from which nothing
continues.
"""

from __future__ import annotations

import collections
import time

import jax
import jax.numpy as jnp
import numpy as np

from spaces.benchmarks.objective import check_fidelities
from spaces.language.compile import Plan
from spaces.language.datasets import Dataset
from spaces.language.training import CandidateTraining, TrainConfig, Trainer, num_params


def epoch_budgets(name: str, fidelities) -> tuple[float, ...]:
    """Whole, increasing epoch counts, or a ``ValueError``."""
    budgets = check_fidelities(name, fidelities, "epochs")
    if any(b != int(b) for b in budgets):
        raise ValueError(f"{name}: epoch fidelities must be whole numbers, got {budgets}")
    return budgets


class EpochTrainer(Trainer):
    """Trains configurations of ``space`` on ``data`` to an epoch budget of ``fidelities`` (module docstring)."""

    def __init__(self, space, data: Dataset, cfg: TrainConfig, fidelities, max_states: int = 256):
        super().__init__(space, data, cfg)
        self.fidelities = epoch_budgets(space.name, fidelities)
        self.max_states = max_states
        self.states: collections.OrderedDict = collections.OrderedDict()  # (canon, seed, epochs) -> device state
        self.stats["epochs_trained"] = 0

    def epoch_programs(self, plan: Plan):
        """(init, one epoch, score) compiled for ``plan``'s signature (cached)."""
        key = ("epochs", plan.signature)
        if key in self.programs:
            self.programs.move_to_end(key)
            return self.programs[key]
        parts = CandidateTraining(plan, self.data, self.cfg)
        x_tr, y_tr, x_va, y_va, x_te, y_te = self._arrays
        traced, k = jnp.asarray(plan.traced_vector), jnp.zeros((2,), jnp.uint32)

        def init(key, traced, x_tr):
            return parts.init(key, traced, x_tr), jnp.bool_(True)

        def epoch(key, traced, state, e, x_tr, y_tr):
            carry, finite = state
            carry, losses = parts.run(key, traced, carry, e[None], x_tr, y_tr)
            return carry, finite & jnp.all(jnp.isfinite(losses))

        def score(traced, state, x_va, y_va, x_te, y_te):
            (params, stats, _), finite = state
            return parts.result(params, stats, finite, jnp.float32(0.0), traced, x_va, y_va, x_te, y_te)

        state = jax.eval_shape(init, k, traced, x_tr)
        programs = (
            self.compile(jax.jit(init), k, traced, x_tr),
            self.compile(jax.jit(epoch), k, traced, state, jnp.int32(0), x_tr, y_tr),
            self.compile(jax.jit(score), traced, state, x_va, y_va, x_te, y_te),
        )
        self.programs[key] = programs
        if len(self.programs) > self.max_programs:
            self.programs.popitem(last=False)
        return programs

    def evaluate(self, tokens, seeds, fidelity=None, parent=None) -> dict[str, np.ndarray]:
        """Trains row ``i`` of ``tokens`` (int[M, N]) with ``seeds[i]`` to ``fidelities[fidelity[i]]`` epochs (None:
        the top), continuing from its kept state at ``fidelities[parent[i]]`` when there is one; returns valid,
        test, cost (seconds), params (f32[M]). A fidelity outside ``[0, F)`` or an invalid string: ``-inf``, cost 0."""
        tokens = np.asarray(tokens)
        m, top = tokens.shape[0], len(self.fidelities) - 1
        fidelity = np.broadcast_to(np.asarray(top if fidelity is None else fidelity, np.int64), (m,))
        parent = np.broadcast_to(np.asarray(-1 if parent is None else parent, np.int64), (m,))
        out = {k: np.full(m, -np.inf, np.float32) for k in ("valid", "test")}
        out.update(cost=np.zeros(m, np.float32), params=np.zeros(m, np.float32))
        valid = np.asarray(jax.vmap(self.space.is_valid)(jnp.asarray(tokens, jnp.int32)))
        for i in range(m):
            plan = self.plan_of_tokens(tokens[i]) if valid[i] and 0 <= fidelity[i] <= top else None
            if plan is None:
                continue
            canon, seed = self.canonical(tokens[i]), int(seeds[i])
            epochs = int(self.fidelities[fidelity[i]])
            memo_key = (canon, seed, epochs)
            if memo_key not in self.memo:
                start = int(self.fidelities[parent[i]]) if 0 <= parent[i] < fidelity[i] else 0
                self.memo[memo_key] = self._train(plan, canon, seed, start, epochs)
            else:
                self.stats["memo_hits"] += 1
            for k, v in self.memo[memo_key].items():
                out[k][i] = v
        return out

    def _train(self, plan: Plan, canon: tuple, seed: int, start: int, epochs: int) -> dict:
        init, epoch, score = self.epoch_programs(plan)
        traced = jnp.asarray(plan.traced_vector)
        key = jnp.asarray(self.training_key(canon, seed), jnp.uint32)
        x_tr, y_tr, x_va, y_va, x_te, y_te = self._arrays
        t = time.perf_counter()
        state = self.states.get((canon, seed, start)) if start else None
        if state is None:  # no kept state to continue from: a fresh training
            start, state = 0, init(key, traced, x_tr)
        else:
            self.states.move_to_end((canon, seed, start))
        for e in range(start, epochs):
            state = epoch(key, traced, state, jnp.int32(e), x_tr, y_tr)
        res = jax.device_get(score(traced, state, x_va, y_va, x_te, y_te))
        elapsed = time.perf_counter() - t
        self.stats.update(trained=self.stats["trained"] + 1, train_s=self.stats["train_s"] + elapsed)
        self.stats["epochs_trained"] += epochs - start
        if epochs < self.fidelities[-1]:  # a later promotion may continue it
            self.states[(canon, seed, epochs)] = state
            while len(self.states) > self.max_states:
                self.states.popitem(last=False)
        n_par = num_params(plan, self.data)
        return {"valid": res["valid"], "test": res["test"], "cost": elapsed, "params": n_par}
