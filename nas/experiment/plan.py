"""A config becomes a run plan once: typed, validated, every searcher's options built, before anything runs.

``make_plan(config, workdir)`` is the one place a config (``nas.experiment.config``) is read for a
run. It checks every field, name, option and budget (one ``ConfigError`` line per mistake, naming
the field and the fix), builds each selected searcher's options once (``SearcherPlan``), finds the
public data files the config leaves empty, and returns a frozen ``RunPlan``. Every later step takes
the plan: the run (``nas.experiment.run.run_plan``), the workdir check, the compile of fresh runs,
the reports. Once the benchmark is loaded, ``RunPlan.build_searchers`` checks each budget against the
space, fills in a multi-fidelity searcher's fidelities, builds the searcher and checks its memory,
all before any program is compiled.

The path from a command to a run: ``scripts.train`` -> ``run_experiment(config, workdir)`` ->
``make_plan`` (``validate_config``: fields, then per selected searcher ``searcher_plan``: options and
budget fields; data files; compile threads; peers under ``--distributed``) -> ``run_plan``
(workdir checked, benchmark loaded, ``build_searchers``, objectives, workdir opened, programs
compiled, runs) -> ``write_reports(plan, workdir)``.
"""

from __future__ import annotations

import dataclasses

import jax

from nas.engine.program_cache import threads_setting
from nas.experiment import multiobjective as mo
from nas.experiment.config import (
    ConfigError,
    SearcherPlan,
    benchmark_kwargs,
    build_benchmark,
    get,
    searcher_entries,
    to_dict,
    validate_config,
    with_data_files,
)
from nas.experiment.workdir import Workdir
from spaces.benchmarks.objective import fidelity_budgets

__all__ = ["RunPlan", "SearcherPlan", "make_plan"]


@dataclasses.dataclass(frozen=True)
class RunPlan:
    """What a run does, checked: the benchmark, the selected searchers, the budgets, the data files, the workdir.

    ``config`` is the config as it runs (the data files found filled in): the workdir saves it and a
    rerun must agree with it. ``entries`` holds every searcher's entry (a report reads the finished
    ones, selected or not); ``searchers`` the selected ones, in the config's order.
    """

    config: dict
    benchmark: str
    benchmark_kwargs: dict
    data_files: dict[str, str]  # config field -> the public file found for it in the data directory
    searchers: dict[str, SearcherPlan]
    entries: dict[str, dict]
    num_trials: int
    max_queries: int
    seed: int
    chunk_steps: int  # 0 = about 10 chunks per run
    report_every: int
    metrics: tuple[str, ...]  # config.metrics: searched beside the score (multi-objective reports)
    recorded: tuple[str, ...]  # what every run records: the metrics and the constraints' metrics
    workdir: str | None

    def load_benchmark(self):
        """The config's objective (a ``ConfigError`` when its loader refuses an option, ``DataError`` for a file)."""
        return build_benchmark(self.config, self.benchmark_kwargs)

    def build_searchers(self, bench) -> dict:
        """label -> the selected searchers on ``bench`` (``SearcherPlan.build``: budget against the space,
        the benchmark's fidelities, memory), before anything is compiled."""
        budgets = fidelity_budgets(bench)
        return {label: s.build(bench.space, budgets) for label, s in self.searchers.items()}

    def trial_keys(self) -> jax.Array:
        """The seeds' keys: ``num_trials`` split from ``PRNGKey(seed)``."""
        return jax.random.split(jax.random.PRNGKey(self.seed), self.num_trials)


def make_plan(config, workdir: str | None = None) -> RunPlan:
    """The checked plan of ``config`` (module docstring); a ``ConfigError`` line on the first mistake.

    ``workdir``: where the run writes (its path is checked here; its contents when the run opens it).
    """
    searchers = validate_config(config)  # each selected searcher's options built here, once
    threads_setting()  # a bad $NASJAX_COMPILE_THREADS is refused before the workdir is touched
    config, found = with_data_files(config)
    cfg = to_dict(config)
    if workdir is not None:
        workdir = Workdir(workdir).path  # an empty --workdir is refused here
    entries = searcher_entries(config)
    if jax.process_count() > 1:
        host_side = [label for label, s in searchers.items() if s.runs_on_host]
        if host_side:
            raise ConfigError(f"{host_side} run on the host of one process; run them without --distributed")
    return RunPlan(
        config=cfg,
        benchmark=cfg["benchmark"],
        benchmark_kwargs=benchmark_kwargs(cfg),
        data_files=found,
        searchers=searchers,
        entries=entries,
        num_trials=int(cfg["num_trials"]),
        max_queries=int(cfg["max_queries"]),
        seed=int(cfg["seed"]),
        chunk_steps=int(get(cfg, "chunk_steps", 0)),
        report_every=int(get(cfg, "report_every", 10)),
        metrics=mo.config_metrics(cfg),
        recorded=mo.recorded_metrics(cfg, entries),
        workdir=workdir,
    )
