"""Runs an experiment config: searchers x seeds on one benchmark, then reports.

    python -m scripts.train --config configs/default.py --workdir /tmp/nas_default
    python -m scripts.train --config configs/baselines.py:hpolib/naval_propulsion --workdir /tmp/naval \
        --config.num_trials=100 --config.searchers.regularized_evolution.population_size=50

``--config.x=y`` overrides any field of the config; a field that does not
exist fails loudly (ml_collections). The config is validated (benchmark and
searcher names, searcher options, data files) before anything is compiled.
Rerunning with the same ``--workdir`` skips finished searchers and resumes an
interrupted one; a different config in the same workdir is refused.
"""

from __future__ import annotations

import sys

from absl import app, flags
from ml_collections import config_flags

_CONFIG = config_flags.DEFINE_config_file("config", None, "Experiment config file (configs/<name>.py[:arg]).")
_WORKDIR = flags.DEFINE_string("workdir", None, "Output directory (created; reused to resume).")
_PROGRESS = flags.DEFINE_bool("progress", True, "Draw a progress bar on stderr.")
_CPU_DEVICES = flags.DEFINE_integer(
    "cpu_devices", 0, "JAX CPU devices to split the seeds over (0 = one per core; 1 = no split). See nas/devices.py."
)
flags.mark_flags_as_required(["config", "workdir"])


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    from nas.devices import use_cpu_cores

    use_cpu_cores(_CPU_DEVICES.value)  # before any JAX computation
    from nas.experiment import ConfigError, run_experiment
    from nas.report import format_table

    config = _CONFIG.value
    try:
        summary = run_experiment(config, _WORKDIR.value, progress=_PROGRESS.value)
    except ConfigError as e:
        sys.stderr.write(f"config error: {e}\n")
        return 2
    print(format_table(summary))
    if summary["split"] == "validation":
        print("NOTE: no test data given; these are VALIDATION errors (set --config.test_data=<csv> for test error).")
    print(f"outputs in {_WORKDIR.value}: summary.json, results.csv, curves.png, history/, metrics.jsonl")
    return 0


if __name__ == "__main__":
    app.run(main)
