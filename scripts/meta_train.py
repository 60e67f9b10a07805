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
from scripts.tnas_settings import PARAMS_NAME, settings

_CONFIG = config_flags.DEFINE_config_file("config", None, "TNAS config file (configs/<suite>_tnas.py:<target>).")
_WORKDIR = flags.DEFINE_string("workdir", None, "Output directory for tnas_params.npz (created; reused to resume).")
_PROGRESS = flags.DEFINE_bool("progress", True, "Print progress on stderr.")
flags.mark_flags_as_required(["config", "workdir"])


def main(argv):
    if len(argv) > 1:
        raise cli.ConfigError(f"unexpected arguments {argv[1:]}")
    from spaces.benchmarks.registry import available_benchmarks, make_benchmark
    from spaces.files import append_line_atomic
    from surrogates.meta_training import meta_train, source_tasks

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
    os.makedirs(_WORKDIR.value, exist_ok=True)
    metrics = os.path.join(_WORKDIR.value, "meta_metrics.jsonl")
    info = meta_train(
        os.path.join(_WORKDIR.value, PARAMS_NAME),
        next(iter(tables.values())).space,
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
    print(f"meta-trained on {info['sources']} (target {target} left out): {_WORKDIR.value}/{PARAMS_NAME}")
    return 0


if __name__ == "__main__":
    cli.run(main)
