"""Meta-training TNAS's deep kernel on the source tasks of a suite (leave-one-task-out), on the host.

Shala, Elsken, Hutter & Grabocka (2023), Section 3.2 and Appendix C. ``meta_train`` runs REPTILE
(``surrogates.reptile.meta_steps``, pure and jit-compiled) in chunks of outer steps, writing the
parameters file (``surrogates.meta_params``) atomically after every chunk; a rerun with the same
output path continues from the last chunk and gives the same parameters as an uninterrupted run
(step ``t`` uses ``fold_in(key, t)``). The target task never enters the meta-data: ``source_tasks``
refuses it, and the file records which tasks were used.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from spaces.files import DataError
from surrogates.deep_kernel import DeepKernelConfig, arch_inputs, init_params, uses_data
from surrogates.meta_params import load_params, save_params
from surrogates.reptile import MetaData, ReptileConfig, meta_steps
from surrogates.task_data import data_pool

_meta_steps = jax.jit(meta_steps, static_argnums=(4, 5, 6))  # one compile per shape and settings, per process
# one program instead of hundreds of op-by-op compilations (and one the persistent compilation cache keeps)
init_params_jit = jax.jit(init_params, static_argnums=1)


class MetaTrainingError(ValueError):
    """Meta-training that must not go on (other settings in the output's place, a diverged meta-loss); the
    message says what to change."""


# Eq. 3's loss per evaluation of standardized scores is a few units: 0.5-2.4 over meta-training on the suites
# of docs/research/tnas.md, at most 20 at the start on tiny tasks. Far above, the kernel has diverged (too large
# a step size).
EXPLODED_LOSS = 100.0


def diverged(losses, w) -> bool:
    """A chunk of outer steps whose loss is not finite or above ``EXPLODED_LOSS``, or whose parameters are not
    finite: its model must be neither written nor used."""
    losses = np.asarray(losses)
    finite_w = all(bool(np.all(np.isfinite(np.asarray(x)))) for x in jax.tree.leaves(w))
    return not finite_w or not np.all(np.isfinite(losses)) or bool(np.any(losses > EXPLODED_LOSS))


def source_tasks(suite: Sequence[str], target: str) -> list[str]:
    """The suite without the target; ``ValueError`` when the target is not one of the suite's tasks."""
    if target not in suite:
        raise ValueError(f"target {target!r} is not a task of the suite {list(suite)}")
    sources = [t for t in suite if t != target]
    if not sources:
        raise ValueError(f"the suite {list(suite)} has no task besides the target {target!r}")
    return sources


ALL_STRINGS_LIMIT = 100_000  # spaces up to this size are listed whole (exhaustive acquisition, meta-training)
FAILED_SCORES = ("error", "worst")  # non-finite source scores: refused (tables) or the task's worst (training)


def all_strings(space, limit: int = ALL_STRINGS_LIMIT) -> np.ndarray:
    """int32[R, N]: one string per configuration of a small space (the first valid string of each string id,
    in id order; exhaustive acquisition). Spaces whose strings name each configuration once (NB201, the
    tables of HPOLib and HPOBench) give all their strings; NAS-Bench-Graph gives one per table row."""
    if space.size > limit:
        raise ValueError(
            f"space {space.name!r} has {space.size:,} strings; exhaustive acquisition lists at most {limit:,}: "
            "give TNAS acq_opt='auto' or 'mutation_random' (candidates instead of every string), or a smaller space"
        )
    grids = np.meshgrid(*[np.arange(c) for c in space.cardinalities], indexing="ij")
    tokens = np.stack([g.reshape(-1) for g in grids], axis=1).astype(np.int32)
    ids = np.asarray(jax.vmap(space.string_id)(jnp.asarray(tokens)))  # -1: invalid (the Space contract)
    uniq, first = np.unique(ids, return_index=True)
    return tokens[first[uniq >= 0]]


def meta_strings(space, limit: int = ALL_STRINGS_LIMIT, num_sampled: int = 20_000, seed: int = 0) -> np.ndarray:
    """The strings meta-training reads: ``all_strings`` of a space of at most ``limit`` strings, else
    ``num_sampled`` distinct valid strings drawn uniformly with a fixed key (NAS-Bench-101's 423k cells;
    the source tables score them all, the top design is the best of the sample)."""
    if space.size <= limit:
        return all_strings(space, limit)
    tokens = np.asarray(jax.jit(jax.vmap(space.sample))(jax.random.split(jax.random.PRNGKey(seed), 2 * num_sampled)))
    ids = np.asarray(jax.jit(jax.vmap(space.string_id))(tokens))
    _, first = np.unique(ids, return_index=True)
    first = np.sort(first[ids[first] >= 0])[:num_sampled]  # in draw order: a prefix is a smaller sample
    if len(first) < num_sampled:
        raise MetaTrainingError(
            f"drew {len(first)} distinct strings of {space.name!r}, not {num_sampled}: lower num_sampled "
            "(config.meta.num_strings)"
        )
    return tokens[first]


def build_meta_data(
    space, tables: Sequence, dk_cfg: DeepKernelConfig, num_strings: int = 20_000, failed: str = "error"
) -> tuple[MetaData, np.ndarray]:
    """Every string's (``meta_strings`` with ``num_sampled=num_strings``) encoder inputs, each source task's
    validation score (searched units; a table's seed mean, a real-training task's run with key 0) and, for
    the data-based dataset encoder, each task's data pool.

    Non-finite scores are a ``DataError`` (``failed="error"``: a table must score every string) or take the
    task's worst finite score (``"worst"``: real training, where a configuration can diverge)."""
    if failed not in FAILED_SCORES:
        raise ValueError(f"failed must be one of {list(FAILED_SCORES)}, got {failed!r}")
    tokens = meta_strings(space, num_sampled=num_strings)
    t = jnp.asarray(tokens)
    scores = np.stack([np.asarray(tb.query(jax.random.PRNGKey(0), t)["valid"]) for tb in tables])
    finite = np.isfinite(scores)
    if not finite.all() and (failed == "error" or not finite.any(axis=1).all()):
        raise DataError(
            f"source tasks score {int((~finite).sum())} of {scores.size} strings non-finite; tables must score "
            "every string (real training: set config.meta.failed_scores='worst')"
        )
    scores = np.where(finite, scores, np.min(np.where(finite, scores, np.inf), axis=1, keepdims=True))
    arch_x = jax.vmap(lambda s: arch_inputs(dk_cfg, space, s))(t)
    feats = jax.vmap(lambda s: space.features(s, "onehot"))(t)
    pools = {}
    if uses_data(dk_cfg):
        x, y, mask = zip(*[data_pool(tb, dk_cfg.data_columns) for tb in tables])
        pools = {"data_x": jnp.asarray(np.stack(x)), "data_y": jnp.asarray(np.stack(y)), "data_mask": np.stack(mask)}
    return MetaData(arch_x=arch_x, features=feats, scores=jnp.asarray(scores, jnp.float32), **pools), tokens


def top_design(tokens: np.ndarray, scores: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` strings with the best mean standardized score over the source tasks (Appendix C)."""
    z = (scores - scores.mean(1, keepdims=True)) / scores.std(1, keepdims=True)
    best = np.argsort(-z.mean(0), kind="stable")[:k]
    return tokens[best]


def meta_train(
    out_path: str,
    space,
    tables: dict,
    target: str,
    suite: Sequence[str],
    dk_cfg: DeepKernelConfig,
    rep_cfg: ReptileConfig,
    outer_steps: int,
    chunk_steps: int,
    seed: int,
    init_design: int = 5,
    num_strings: int = 20_000,
    failed_scores: str = "error",
    progress: bool = True,
    log: Callable[[dict], None] | None = None,
) -> dict:
    """Meta-trains on ``tables`` (name -> table of ``space``) of the suite minus ``target``; returns the meta info."""
    sources = source_tasks(suite, target)
    if target in tables or sorted(tables) != sorted(sources):
        raise ValueError(f"meta-training tables must be exactly the sources {sources} (never the target {target!r})")
    meta = {
        "space": space.name,
        "target": target,
        "sources": sources,
        "seed": seed,
        "outer_steps": outer_steps,
        "reptile": dataclasses.asdict(rep_cfg),
    }
    if space.size > ALL_STRINGS_LIMIT or failed_scores != "error":  # recorded where they change the meta-data
        meta.update(num_strings=num_strings, failed_scores=failed_scores)
    key = jax.random.PRNGKey(seed)
    start, resumed = 0, os.path.exists(out_path)
    if resumed:
        w, old_model, old_meta, _, start = load_params(out_path)
        fixed = [k for k in meta if k != "outer_steps"]  # more outer steps may be asked for; nothing else may change
        changed = [k for k in fixed if old_meta.get(k) != meta[k]] + (["model"] if old_model != dk_cfg else [])
        if changed:
            raise MetaTrainingError(
                f"{out_path} was meta-trained with other settings ({', '.join(changed)} differ); "
                "use a new --workdir or delete this one"
            )
    data, tokens = build_meta_data(space, [tables[s] for s in sources], dk_cfg, num_strings, failed_scores)
    design = top_design(tokens, np.asarray(data.scores), init_design)
    if resumed and progress:
        print(f"resuming meta-training at outer step {start}/{outer_steps}", file=sys.stderr)
    if not resumed:
        example = data.data_x[0, : dk_cfg.data_rows] if uses_data(dk_cfg) else data.features[:2]
        w = init_params_jit(jax.random.fold_in(key, 1), dk_cfg, data.arch_x[:2], example)
    began = time.time()
    while start < outer_steps:
        num = min(chunk_steps, outer_steps - start)
        w, losses, tasks = _meta_steps(jax.random.fold_in(key, 2), w, data, jnp.int32(start), num, rep_cfg, dk_cfg)
        if diverged(losses, w):  # nothing of this chunk is written: a searcher never reads a diverged model
            kept = f"{out_path} keeps outer step {start}, unfinished" if os.path.exists(out_path) else "nothing written"
            worst = float(np.max(np.where(np.isnan(losses), np.inf, losses)))
            raise MetaTrainingError(
                f"meta-training diverged by outer step {start + num}: eq. 3 loss per evaluation up to "
                f"{worst:.3g} (above {EXPLODED_LOSS:g} or not finite; {kept}); lower config.meta.inner_lr "
                f"({rep_cfg.inner_lr}) or config.meta.outer_lr ({rep_cfg.outer_lr}) and use a new --workdir"
            )
        start += num
        save_params(out_path, w, dk_cfg, meta, design, start)
        info = {
            "outer_step": start,
            "loss": float(np.mean(np.asarray(losses))),
            "tasks": np.bincount(np.asarray(tasks), minlength=len(sources)).tolist(),
            "seconds": time.time() - began,
        }
        if log is not None:
            log(info)
        if progress:
            print(f"\rmeta-train {start}/{outer_steps} loss {info['loss']:.4f}", end="", file=sys.stderr, flush=True)
    if progress:
        print(file=sys.stderr)
    if not os.path.exists(out_path):  # outer_steps == 0: still write the initial parameters
        save_params(out_path, w, dk_cfg, meta, design, start)
    return meta
