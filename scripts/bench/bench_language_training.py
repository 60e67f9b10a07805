"""Architectures trained per second: one vmapped program per signature vs one at a time.

    python -m scripts.bench.bench_language_training --task=diabetes_mlp --group=8 --epochs=20

Draws ``group`` architectures of ``--task`` that share one compiled signature (they differ only
in traced hyperparameters: activations, dropout rates), then trains them (a) as one vmapped
program (``Trainer`` with ``max_group=group``) and (b) one at a time (``max_group=1``). Prints
compile and training seconds of each and the training throughput (compilation excluded; each
path is timed on its second call with a fresh memo, so both run compiled code).
"""

from __future__ import annotations

import dataclasses
import time

import jax
import numpy as np
from absl import flags

from nas.experiment import cli

_TASK = flags.DEFINE_string("task", "diabetes_mlp", "Language task (spaces.language.tasks).")
_GROUP = flags.DEFINE_integer("group", 8, "Architectures of one signature (a power of two).")
_EPOCHS = flags.DEFINE_integer("epochs", 20, "Training epochs.")
_SEED = flags.DEFINE_integer("seed", 0, "Seed of the architecture draw.")


def same_signature(task, n: int, seed: int) -> np.ndarray:
    """``n`` distinct architectures with the signature of the first sampled one."""
    sp = task.space
    keys = jax.random.split(jax.random.PRNGKey(seed), 4096)
    pool = np.asarray(jax.vmap(sp.sample)(keys))
    first = task.trainer.plan_of_tokens(pool[0]).signature
    out, seen = [], set()
    for row in pool:
        canon = tuple(np.where(sp.active_np(row), row, 0))
        if canon in seen or task.trainer.plan_of_tokens(row).signature != first:
            continue
        seen.add(canon)
        out.append(row)
        if len(out) == n:
            return np.stack(out)
    raise SystemExit(f"found only {len(out)} architectures with one signature in 4096 samples; lower --group")


def main(argv):
    del argv
    from spaces.language.tasks import make_task
    from spaces.language.training import Trainer

    task = make_task(_TASK.value, epochs=_EPOCHS.value)
    tokens = same_signature(task, _GROUP.value, _SEED.value)
    seeds = np.zeros(len(tokens), np.int64)
    for label, max_group in (("vmapped", _GROUP.value), ("one at a time", 1)):
        cfg = dataclasses.replace(task.trainer.cfg, max_group=max_group, min_group=1)
        trainer = Trainer(task.space, task.data, cfg)
        trainer.evaluate(tokens, seeds)  # compiles
        compile_s = trainer.stats["compile_s"]
        trainer.memo.clear()
        t = time.perf_counter()
        res = trainer.evaluate(tokens, seeds)
        train_s = time.perf_counter() - t
        print(
            f"{label:>14}: {len(tokens)} architectures, compile {compile_s:.1f}s, train {train_s:.2f}s, "
            f"{len(tokens) / train_s:.2f} architectures/s, mean valid {np.mean(res['valid']):.4f}"
        )


if __name__ == "__main__":
    cli.run(main)
