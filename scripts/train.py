"""Runs an experiment config: searchers x seeds on one benchmark, then reports.

    python -m scripts.train --config configs/default.py --workdir /tmp/nas_default
    python -m scripts.train --config configs/baselines.py:hpolib/naval_propulsion --workdir /tmp/naval \
        --config.num_trials=100 --config.searchers.regularized_evolution.population_size=50

``--config.x=y`` overrides any field of the config, including any option of a
configured searcher. Every mistake (a misspelt field, a missing file, an unknown
searcher or benchmark, an option value out of range, a workdir in use) stops
with one line ``config error: ...`` (or ``data error:``) and exit code 2, before
anything is compiled or written. Rerunning with the same ``--workdir`` skips
finished searchers and resumes an interrupted one; a different config in the
same workdir is refused.

Across hosts, run the same command in every process with ``--distributed`` (a TPU pod, SLURM or
Open MPI is detected; elsewhere set ``JAX_COORDINATOR_ADDRESS``, ``JAX_NUM_PROCESSES`` and
``JAX_PROCESS_ID``): the seeds split over every process's devices, and process 0 writes the
workdir and prints the table (docs/reference/scaling.md).

JAX's persistent compilation cache is on by default (``--compilation_cache``,
default ``$JAX_COMPILATION_CACHE_DIR`` or ``~/.cache/nasjax/jax``; ``--compilation_cache=`` turns it off).
"""

from __future__ import annotations

from absl import flags
from ml_collections import config_flags

from nas.experiment import cli

_CONFIG = config_flags.DEFINE_config_file("config", None, "Experiment config file (configs/<name>.py[:arg]).")
_WORKDIR = flags.DEFINE_string("workdir", None, "Output directory (created; reused to resume).")
_PROGRESS = flags.DEFINE_bool("progress", True, "Draw a progress bar on stderr.")
_CPU_DEVICES = flags.DEFINE_integer(
    "cpu_devices",
    0,
    "JAX CPU devices to split the seeds over (0 = one per core; 1 = no split). See nas/engine/devices.py.",
)
_COMPILATION_CACHE = flags.DEFINE_string(
    "compilation_cache",
    cli.DEFAULT_COMPILATION_CACHE,
    "JAX persistent compilation cache directory ('' = off).",
)
_DISTRIBUTED = flags.DEFINE_bool(
    "distributed", False, "Join a multi-process run (jax.distributed.initialize; see nas/engine/devices.py)."
)
flags.mark_flags_as_required(["config", "workdir"])


def main(argv):
    if len(argv) > 1:
        raise cli.ConfigError(f"unexpected arguments {argv[1:]}; flags look like --config.num_trials=100")
    if _CPU_DEVICES.value < 0:
        raise cli.ConfigError(f"--cpu_devices must be >= 0 (0 = one per core), got {_CPU_DEVICES.value}")
    from nas.engine.devices import enable_compilation_cache, initialize_distributed, is_lead, use_cpu_cores

    use_cpu_cores(_CPU_DEVICES.value)  # before any JAX computation
    if _DISTRIBUTED.value:
        initialize_distributed()
    enable_compilation_cache(cli.output_folder(_COMPILATION_CACHE.value, "compilation_cache", ", or '' (no cache)"))
    from nas.experiment.run import run_experiment, run_report

    summary = run_experiment(_CONFIG.value, _WORKDIR.value, progress=_PROGRESS.value)
    if not is_lead():
        return 0  # process 0 writes the workdir and prints the table
    print(run_report(summary, _WORKDIR.value))
    return 0


if __name__ == "__main__":
    cli.run(main)
