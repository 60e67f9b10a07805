"""Runs a language-space search config with real training (host-side evaluation) and prints its table.

    python -m scripts.language_search --config configs/language_search.py --workdir /tmp/lang_digits
    python -m scripts.language_search --config configs/language_search.py:diabetes_mlp --workdir /tmp/lang_diab \
        --config.num_trials=2 --config.train.epochs=20

``--config.x=y`` overrides any field, including searcher options
(``--config.searchers.mcts.exploration=1.0``) and training options (``--config.train.epochs=4``).
Mistakes stop with one line ``config error: ...`` and exit code 2 before any training. A rerun
with the same ``--workdir`` skips the runs already saved there (``runs/*.npz``). Outputs:
``summary.json`` and ``runs/<label>_<trial>.npz`` (tokens, valid, test, cost, params, wall_s per query).
"""

from __future__ import annotations

from absl import flags
from ml_collections import config_flags

from nas.experiment import cli

_CONFIG = config_flags.DEFINE_config_file("config", None, "Config file (configs/language_search.py[:task]).")
_WORKDIR = flags.DEFINE_string("workdir", None, "Output directory (created; reused to resume).")
_COMPILATION_CACHE = flags.DEFINE_string(
    "compilation_cache",
    cli.DEFAULT_COMPILATION_CACHE,
    "JAX persistent compilation cache directory ('' = off).",
)
flags.mark_flags_as_required(["config", "workdir"])


def main(argv):
    if len(argv) > 1:
        raise cli.ConfigError(f"unexpected arguments {argv[1:]}; flags look like --config.num_trials=2")
    from nas.experiment.task_experiment import format_summary, run_task_experiment, validate_task_config

    searchers = validate_task_config(_CONFIG.value)  # before anything is written
    from nas.engine.devices import enable_compilation_cache

    enable_compilation_cache(cli.output_folder(_COMPILATION_CACHE.value, "compilation_cache", ", or '' (no cache)"))
    summary = run_task_experiment(_CONFIG.value, _WORKDIR.value, searchers=searchers)
    print(format_summary(summary))
    print("trainer:", summary["trainer"])
    print(f"outputs in {_WORKDIR.value}: summary.json, runs/")
    return 0


if __name__ == "__main__":
    cli.run(main)
