"""Training compiled language networks with optax, many candidates per compiled program.

Negrinho et al. 2019, Section 7: sampled architectures are trained with Adam (learning rate
0.001) and compared by validation accuracy. ``Trainer.evaluate(tokens, seeds)`` trains a batch
of architectures of a flattened space (``FlatLanguageSpace``) on a ``Dataset``:

1. each string is decoded and compiled to a ``Plan`` (``spaces.language.compile``);
2. the batch is grouped by ``Plan.signature``: architectures with one signature compute the same
   function of (parameters, inputs, traced hyperparameters), so a group trains as ONE program,
   ``vmap``-ed over its members (their traced hyperparameters, e.g. dropout rates and activation
   choices, differ; the group is padded to a power of two so a group size compiles once);
3. programs are cached per (signature, group size): an architecture seen again, or another one
   with the same signature, reuses the compiled train step. Results are memoized per
   (canonical string, seed), so an architecture queried twice is trained once.

An architecture trained with seed ``s`` starts from the key ``fold_in(PRNGKey(s), crc32 of its
canonical string)`` (initial parameters, data order, dropout masks), so its result does not depend
on which other candidates share its batch or group.

One program trains ``epochs`` epochs of mini-batch Adam in a ``lax.scan`` (network = the
architecture's graph, then flatten and a dense head with ``num_outputs``), then scores the
validation and test splits: accuracy in [0, 1] for classification, ``-log(MSE)`` for
regression. Its pieces (initialize, run epochs from a state, score) are ``CandidateTraining``,
which ``spaces.language.epoch_training`` also compiles one epoch at a time (epochs as a fidelity).
A run whose loss or parameters become non-finite (divergence) scores ``-inf`` on
both, as does an invalid string; it never raises and is never a best. ``cost`` is the
candidate's share of its group's training wall time (compilation excluded; ``stats`` keeps it).
"""

from __future__ import annotations

import collections
import dataclasses
import math
import os
import time
import zlib

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from spaces.language.compile import CompiledNetwork, Plan, plan_of
from spaces.language.core import InvalidArchitecture
from spaces.language.datasets import Dataset


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Attributes:
    epochs: passes over the training split.
    batch_size: mini-batch size (the last partial batch of an epoch is dropped).
    learning_rate: Adam's step size (0.001 in the paper).
    max_group: largest number of candidates vmapped in one program (larger groups are split).
    min_group: smallest program size: groups are padded to a power of two, at least this
        (``min_group = max_group``: one program per signature, at the price of padded rows).
    eval_batch: rows per forward pass when scoring a split.
    xla_optimization_level: XLA's backend optimization level for the training programs (None =
        XLA's default). Every structural architecture compiles its own program, so for brief
        trainings of many architectures the compile dominates. Measured on digits, Genetic space,
        2 epochs, per architecture: default 10 s compile + 1.1 s training; level 1 4.8 s + 1.1 s
        (same accuracies); level 0 3.7 s + 8.7 s (convolutions run unoptimized).
    """

    epochs: int = 3
    batch_size: int = 64
    learning_rate: float = 1e-3
    max_group: int = 16
    min_group: int = 1
    eval_batch: int = 512
    xla_optimization_level: int | None = None

    def __post_init__(self):
        for name in ("epochs", "batch_size", "max_group", "min_group", "eval_batch"):
            if getattr(self, name) < 1:
                raise ValueError(f"training option {name} must be >= 1, got {getattr(self, name)}")
        if self.min_group > self.max_group:
            raise ValueError(f"min_group ({self.min_group}) must be <= max_group ({self.max_group})")
        if not self.learning_rate > 0:
            raise ValueError(f"learning_rate must be > 0, got {self.learning_rate}")


class Network(nn.Module):
    """The compiled architecture followed by a dense head."""

    plan: Plan
    num_outputs: int

    @nn.compact
    def __call__(self, x, traced, train: bool = False):
        y = CompiledNetwork(self.plan, name="body")(x, traced, train)
        return nn.Dense(self.num_outputs, name="head")(y.reshape(y.shape[0], -1))


def num_params(plan: Plan, data: Dataset) -> int:
    model = Network(plan, data.num_outputs)
    x = jnp.zeros((1,) + data.input_shape, jnp.float32)
    shapes = jax.eval_shape(model.init, jax.random.PRNGKey(0), x, jnp.asarray(plan.traced_vector))
    return int(sum(math.prod(a.shape) for a in jax.tree_util.tree_leaves(shapes.get("params", {}))))


class CandidateTraining:
    """The pieces of one candidate's training, shared by the fused program (``make_train_fn``: every epoch
    in one ``lax.scan``) and the epoch programs of ``spaces.language.epoch_training`` (fidelities).

    A candidate's key splits into (init, data order, dropout) keys; epoch ``e`` visits the training
    rows in the order ``permutation(fold_in(k_perm, e))`` and step ``i`` (counted from the first epoch)
    draws its dropout masks from ``fold_in(k_drop, i)``, so what an epoch does depends on its index,
    never on how many epochs the training has.
    """

    def __init__(self, plan: Plan, data: Dataset, cfg: TrainConfig):
        self.model = Network(plan, data.num_outputs)
        self.classify = data.kind == "classification"
        self.num_outputs = data.num_outputs
        self.eval_batch = cfg.eval_batch
        self.n_train = data.x_train.shape[0]
        self.bs = min(cfg.batch_size, self.n_train)
        self.steps = max(self.n_train // self.bs, 1)  # steps per epoch
        self.opt = optax.adam(cfg.learning_rate)

    def loss_of(self, out, y):
        if self.classify:
            return optax.softmax_cross_entropy_with_integer_labels(out, y).mean()
        return jnp.mean((out[:, 0] - y) ** 2)

    def score(self, variables, traced, x, y):
        chunks = -(-x.shape[0] // self.eval_batch)
        pad = chunks * self.eval_batch - x.shape[0]
        xs = jnp.pad(x, [(0, pad)] + [(0, 0)] * (x.ndim - 1)).reshape((chunks, self.eval_batch) + x.shape[1:])
        out = jax.lax.map(lambda xb: self.model.apply(variables, xb, traced, False), xs).reshape(-1, self.num_outputs)
        out = out[: x.shape[0]]
        if self.classify:
            return jnp.mean(jnp.argmax(out, -1) == y)
        return -jnp.log(jnp.mean((out[:, 0] - y) ** 2))

    def init(self, key, traced, x_tr):
        """(params, batch stats or None, optimizer state) at step 0."""
        k_init, _, k_drop = jax.random.split(key, 3)
        variables = self.model.init({"params": k_init, "dropout": k_drop}, x_tr[:1], traced, False)
        params, stats = variables["params"], variables.get("batch_stats")
        return params, stats, self.opt.init(params)

    def run(self, key, traced, carry, epochs, x_tr, y_tr):
        """``carry`` (params, stats, opt_state) trained through ``epochs`` (int32[E], consecutive); the losses."""
        _, k_perm, k_drop = jax.random.split(key, 3)
        n_train, bs, steps = self.n_train, self.bs, self.steps
        perms = jax.vmap(lambda e: jax.random.permutation(jax.random.fold_in(k_perm, e), n_train)[: steps * bs])(
            epochs
        ).reshape(epochs.shape[0] * steps, bs)
        model = self.model

        def step(carry, xs):
            params, stats, opt_state = carry
            i, idx = xs

            def loss_fn(p):
                v = {"params": p} if stats is None else {"params": p, "batch_stats": stats}
                out, upd = model.apply(
                    v, x_tr[idx], traced, True, rngs={"dropout": jax.random.fold_in(k_drop, i)}, mutable=["batch_stats"]
                )
                return self.loss_of(out, y_tr[idx]), upd

            (loss, upd), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
            updates, opt_state = self.opt.update(grads, opt_state, params)
            params = optax.apply_updates(params, updates)
            return (params, upd.get("batch_stats", stats) if stats is not None else None, opt_state), loss

        first = epochs[0] * steps
        return jax.lax.scan(step, carry, (first + jnp.arange(perms.shape[0]), perms))

    def result(self, params, stats, finite_losses, last_loss, traced, x_va, y_va, x_te, y_te):
        """``{"valid", "test", "loss"}``: scores of the trained candidate, ``-inf`` when anything diverged."""
        v = {"params": params} if stats is None else {"params": params, "batch_stats": stats}
        finite = finite_losses & jnp.all(jnp.asarray([jnp.all(jnp.isfinite(a)) for a in jax.tree_util.tree_leaves(v)]))
        va, te = self.score(v, traced, x_va, y_va), self.score(v, traced, x_te, y_te)
        bad = ~finite | ~jnp.isfinite(va) | ~jnp.isfinite(te)
        return {"valid": jnp.where(bad, -jnp.inf, va), "test": jnp.where(bad, -jnp.inf, te), "loss": last_loss}


def make_train_fn(plan: Plan, data: Dataset, cfg: TrainConfig):
    """``train(keys[K], traced[K, T], x_tr, y_tr, x_va, y_va, x_te, y_te) -> {"valid", "test", "loss"}[K]``."""
    parts = CandidateTraining(plan, data, cfg)

    def train_one(key, traced, x_tr, y_tr, x_va, y_va, x_te, y_te):
        carry = parts.init(key, traced, x_tr)
        (params, stats, _), losses = parts.run(key, traced, carry, jnp.arange(cfg.epochs), x_tr, y_tr)
        return parts.result(params, stats, jnp.all(jnp.isfinite(losses)), losses[-1], traced, x_va, y_va, x_te, y_te)

    return jax.jit(jax.vmap(train_one, in_axes=(0, 0) + (None,) * 6))


def candidate_hash(canonical: tuple) -> int:
    """A process-independent 31-bit hash of a canonical token string (folded into the training key)."""
    return zlib.crc32(np.asarray(canonical, np.int32).tobytes()) & 0x7FFFFFFF


class Trainer:
    """Trains batches of architectures of ``space`` on ``data`` (module docstring)."""

    def __init__(self, space, data: Dataset, cfg: TrainConfig = TrainConfig(), max_programs: int = 64):
        self.space, self.data, self.cfg = space, data, cfg
        self.max_programs = max_programs
        self.programs: collections.OrderedDict = collections.OrderedDict()
        self.memo: dict[tuple, dict] = {}
        self.stats = {"trained": 0, "programs_compiled": 0, "compile_s": 0.0, "train_s": 0.0, "memo_hits": 0}
        self._arrays = tuple(
            jnp.asarray(a) for a in (data.x_train, data.y_train, data.x_valid, data.y_valid, data.x_test, data.y_test)
        )

    def program(self, plan: Plan, k: int, traced: np.ndarray):
        """The compiled train step for ``plan``'s signature and group size ``k`` (cached)."""
        key = (plan.signature, k)
        if key in self.programs:
            self.programs.move_to_end(key)
            return self.programs[key]
        fn = make_train_fn(plan, self.data, self.cfg)
        compiled = self.compile(fn, jnp.zeros((k, 2), jnp.uint32), jnp.asarray(traced), *self._arrays)
        self.programs[key] = compiled
        if len(self.programs) > self.max_programs:
            self.programs.popitem(last=False)
        return compiled

    def compile(self, fn, *args):
        """``fn`` (jitted) compiled for ``args`` at the configured XLA level; the time goes to ``stats``."""
        t = time.perf_counter()
        level = self.cfg.xla_optimization_level  # as searchers' levels: XLA_FLAGS wins
        set_by_env = "xla_backend_optimization_level" in os.environ.get("XLA_FLAGS", "")
        opts = None if level is None or set_by_env else {"xla_backend_optimization_level": int(level)}
        compiled = fn.lower(*args).compile(compiler_options=opts)
        self.stats["compile_s"] += time.perf_counter() - t
        self.stats["programs_compiled"] += 1
        return compiled

    def canonical(self, tokens) -> tuple:
        """One string's canonical form (inactive tokens 0): the memo key with its seed."""
        return tuple(np.where(self.space.active_np(tokens), tokens, 0).tolist())

    @staticmethod
    def training_key(canon: tuple, seed: int) -> np.ndarray:
        """The key a candidate trains with (module docstring): independent of its batch mates."""
        return np.asarray(jax.random.fold_in(jax.random.PRNGKey(int(seed)), candidate_hash(canon)))

    def plan_of_tokens(self, tokens) -> Plan | None:
        """The plan of one string, or None when it is invalid (never raises on a bad architecture)."""
        if not bool(self.space.is_valid(jnp.asarray(tokens))):
            return None
        try:
            return plan_of(self.space.decode(tokens)[0])
        except InvalidArchitecture:
            return None

    def evaluate(self, tokens: np.ndarray, seeds: np.ndarray) -> dict[str, np.ndarray]:
        """Trains each row of ``tokens`` (int[M, N]) with its seed; returns valid, test, cost, params (f32[M])."""
        tokens = np.asarray(tokens)
        m = tokens.shape[0]
        out = {k: np.full(m, -np.inf, np.float32) for k in ("valid", "test")}
        out["cost"] = np.zeros(m, np.float32)
        out["params"] = np.zeros(m, np.float32)
        groups: dict[tuple, list] = {}
        valid = np.asarray(jax.vmap(self.space.is_valid)(jnp.asarray(tokens, jnp.int32)))
        for i in range(m):
            if not valid[i]:
                continue  # -inf, never trained
            canon = self.canonical(tokens[i])
            memo_key = (canon, int(seeds[i]))
            if memo_key in self.memo:
                self.stats["memo_hits"] += 1
                for k, v in self.memo[memo_key].items():
                    out[k][i] = v
                continue
            plan = self.plan_of_tokens(tokens[i])
            if plan is None:
                continue
            groups.setdefault(plan.signature, []).append((i, plan, memo_key))
        keys = {}
        for members in groups.values():
            for i, _, (canon, seed) in members:
                keys[i] = self.training_key(canon, seed)
        for members in groups.values():
            for start in range(0, len(members), self.cfg.max_group):
                self._train_group(members[start : start + self.cfg.max_group], keys, out)
        return out

    def _train_group(self, members: list, keys: dict, out: dict) -> None:
        k = max(1 << (len(members) - 1).bit_length(), self.cfg.min_group)  # a power of two: a program per size
        rows = [members[min(j, len(members) - 1)] for j in range(k)]
        traced = np.stack([p.traced_vector for _, p, _ in rows]).reshape(k, -1)
        keys = np.stack([keys[i] for i, _, _ in rows])
        prog = self.program(rows[0][1], k, traced)
        t = time.perf_counter()
        res = jax.device_get(prog(jnp.asarray(keys, jnp.uint32), jnp.asarray(traced), *self._arrays))
        elapsed = time.perf_counter() - t
        self.stats["train_s"] += elapsed
        self.stats["trained"] += len(members)
        n_par = num_params(rows[0][1], self.data)
        for j, (i, _, memo_key) in enumerate(members):
            r = {"valid": res["valid"][j], "test": res["test"][j], "cost": elapsed / len(members), "params": n_par}
            self.memo[memo_key] = r
            for name, v in r.items():
                out[name][i] = v
