"""Meta-trains TNAS's deep-kernel GP on a suite's source tasks, leaving the target out.

    python -m scripts.meta_train --config configs/nb201_tnas.py:cifar10 --workdir /tmp/nasjax_tnas/cifar10

Reads ``config.benchmark`` (the target), ``config.suite`` (comma-separated benchmark names of one space),
``config.meta`` (REPTILE settings, Algorithm 1: outer steps, inner steps v, batch size k, learning rates)
and ``config.model`` (the deep kernel's shape). Writes ``<workdir>/tnas_params.npz`` (atomically, after
every chunk of outer steps) and ``<workdir>/meta_metrics.jsonl``; rerunning with the same workdir
resumes, and a workdir meta-trained with other settings is refused. The target's table is never loaded.
"""

from __future__ import annotations

import json
import os

from absl import flags
from ml_collections import config_flags

from nas.experiment import cli
from nas.experiment.tnas_settings import PARAMS_NAME, settings

_CONFIG = config_flags.DEFINE_config_file("config", None, "TNAS config file (configs/<suite>_tnas.py:<target>).")
_WORKDIR = flags.DEFINE_string("workdir", None, "Output directory for tnas_params.npz (created; reused to resume).")
_PROGRESS = flags.DEFINE_bool("progress", True, "Print progress on stderr.")
flags.mark_flags_as_required(["config", "workdir"])


def main(argv):
    if len(argv) > 1:
        raise cli.ConfigError(f"unexpected arguments {argv[1:]}")
    from spaces.benchmarks.registry import available_benchmarks, make_benchmark
    from spaces.files import append_line_atomic
    from surrogates.meta_training import MetaTrainingError, meta_train, source_tasks

    target, suite, rep, model, meta = settings(_CONFIG.value)
    try:
        sources = source_tasks(suite, target)
    except ValueError as e:
        raise cli.ConfigError(f"config.suite / config.benchmark: {e}") from e
    bad = [s for s in suite if s not in available_benchmarks()]
    if bad:
        raise cli.ConfigError(f"config.suite names unknown benchmarks {bad}")
    tables = {s: make_benchmark(s) for s in sources}  # the target's table is never loaded
    spaces = {t.space.name for t in tables.values()}
    if len(spaces) != 1:
        raise cli.ConfigError(f"the suite's tasks must share one search space, got {sorted(spaces)}")
    space = next(iter(tables.values())).space
    check_meta_budget(space, model, rep, meta, len(sources))
    os.makedirs(_WORKDIR.value, exist_ok=True)
    metrics = os.path.join(_WORKDIR.value, "meta_metrics.jsonl")
    try:
        info = meta_train(
            os.path.join(_WORKDIR.value, PARAMS_NAME),
            space,
            tables,
            target,
            suite,
            model,
            rep,
            outer_steps=meta["outer_steps"],
            chunk_steps=meta["chunk_steps"],
            seed=meta["seed"],
            init_design=meta["init_design"],
            num_strings=meta["num_strings"],
            failed_scores=meta["failed_scores"],
            progress=_PROGRESS.value,
            log=lambda line: append_line_atomic(metrics, json.dumps(line)),
        )
    except MetaTrainingError as e:  # other settings in the workdir, a diverged meta-loss: what to change
        raise cli.ConfigError(str(e)) from e
    print(f"meta-trained on {info['sources']} (target {target} left out): {_WORKDIR.value}/{PARAMS_NAME}")
    return 0


def check_meta_budget(space, model, rep, meta: dict, num_sources: int) -> None:
    """The strings meta-training reads (every string of a small space, else ``config.meta.num_strings``),
    its batches and its seed against the space and the memory of the meta-data (``nas.engine.budget``)."""
    import jax
    import jax.numpy as jnp

    from nas.engine.budget import Budget, BudgetError, check_budget
    from surrogates.deep_kernel import arch_inputs
    from surrogates.meta_training import ALL_STRINGS_LIMIT

    small = space.size <= ALL_STRINGS_LIMIT
    strings = (space.num_configurations or space.size) if small else meta["num_strings"]
    names = {
        "max_queries": "config.meta.num_strings" if not small else "the space's strings",
        "batch_size": "config.meta.batch_size",
        "seed": "config.meta.seed",
    }
    budget = Budget(max_queries=strings, batch_size=rep.batch_size, seed=meta["seed"], names=names)
    try:
        check_budget(budget, space)
        one = jax.eval_shape(lambda t: arch_inputs(model, space, t), jnp.zeros(space.num_tokens, jnp.int32))
        per_string = one.size * one.dtype.itemsize + 4 * (space.feature_dim("onehot") + num_sources)
        check_budget(budget, space, state_bytes=strings * per_string)  # the meta-data in memory
    except BudgetError as e:
        raise cli.ConfigError(str(e)) from e
    except ValueError as e:  # an encoder that does not read this space
        raise cli.ConfigError(f"config.model: {e}") from e
    if rep.set_max > strings:
        raise cli.ConfigError(f"config.meta.set_max={rep.set_max} exceeds the {strings} strings meta-training reads")


if __name__ == "__main__":
    cli.run(main)
