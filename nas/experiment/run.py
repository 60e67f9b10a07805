"""Experiment configs -> benchmark + searchers -> many-seed runs -> reports.

``run_experiment(config, workdir)`` validates the config
(``nas.experiment.config``), builds the objective and every searcher, and only
then opens the workdir (``nas.experiment.workdir``: created, locked, its config checked).
Each selected searcher runs ``num_trials`` seeds with the chunked host loop
(``nas.engine.host_loop``); finished searchers are kept, an interrupted one resumes
from its checkpoint with identical numbers; at the end the reports are written
(``nas.experiment.report``: summary.json, results.csv, curves.png).

In a multi-process run (``scripts.train --distributed``) every process runs the same compiled
chunks on its share of the seeds; process 0 alone owns the workdir (lock, checkpoints,
histories, reports) and broadcasts what it finds there, so the other processes need no access to it.
"""

from __future__ import annotations

import contextlib
import json
import os
import time

import jax
import numpy as np

from nas.core.dedup import count_repeats
from nas.engine.devices import from_lead, is_lead
from nas.engine.host_loop import compile_runs, run_chunked
from nas.engine.program_cache import threads_setting
from nas.experiment import multiobjective as mo
from nas.experiment import peers
from nas.experiment import report as rep
from nas.experiment.config import (
    RUN_FIELDS,
    ConfigError,
    build_benchmark,
    build_searcher,
    check_run_budget,
    get,
    searcher_entries,
    selected_labels,
    to_dict,
    trial_keys,
    validate_config,
    with_data_files,
)
from nas.experiment.workdir import Workdir
from spaces.benchmarks.constrained import constrain
from spaces.benchmarks.metrics import check_metrics
from spaces.benchmarks.objective import fidelity_budgets

__all__ = ["ConfigError", "run_experiment", "write_reports", "validate_config"]


def run_experiment(config, workdir: str, progress: bool = True, max_chunks: int | None = None) -> dict | None:
    """Runs the selected searchers into ``workdir`` and writes the reports.

    Everything is validated and built (objective, searchers) before the workdir
    is touched. ``max_chunks`` stops each unfinished searcher after that many
    chunks (an interruption, for tests); the function then returns None before
    writing the reports.
    """
    validate_config(config)
    threads_setting()  # a bad $NASJAX_COMPILE_THREADS is refused before the workdir is touched
    config, found = with_data_files(config)
    cfg = to_dict(config)
    wd = Workdir(workdir)
    wd.check_config(config)
    bench = build_benchmark(config)
    budgets = fidelity_budgets(bench)
    searchers = {}
    for label in selected_labels(config):
        check_run_budget(config, label, bench.space)  # before the searcher sizes anything by the budget
        searchers[label] = build_searcher(config, label, bench.space, budgets)
        check_run_budget(config, label, bench.space, searchers[label])  # the memory of its run state
    keys = trial_keys(config)
    entries = searcher_entries(config)
    recorded = mo.recorded_metrics(cfg, entries)
    objectives = objectives_of(bench, recorded, {label: entries[label] for label in searchers})
    lead = is_lead()
    for field, path in found.items():
        if lead:
            print(f"config.{field}: {path} (found in the data directory)", flush=True)
    if jax.process_count() > 1:
        host_side = [label for label, s in searchers.items() if isinstance(s, peers.Peer)]
        if host_side:
            raise ConfigError(f"{host_side} run on the host of one process; run them without --distributed")
    with open_workdir(wd, config, lead):
        if max_chunks is None and jax.process_count() == 1:
            compile_fresh_runs(wd, searchers, objectives, keys, int(get(cfg, "chunk_steps", 0)), recorded, progress)
        interrupted = False
        for label, searcher in searchers.items():
            if from_lead(np.bool_(lead and os.path.exists(wd.history_path(label)))):
                if lead:
                    print(f"{label}: finished earlier, skipped ({wd.history_path(label)})", flush=True)
                continue
            fields = {k: cfg.get(k) for k in RUN_FIELDS if k != "metrics"}  # the runner adds the recorded metrics
            extra = json.dumps({"entry": entries[label], **fields}, sort_keys=True)
            if lead and hasattr(searcher, "schedule"):  # a multi-fidelity schedule, said once
                print(searcher.schedule(getattr(bench, "fidelity_unit", "")), flush=True)
                if len(budgets) == 1:
                    print(f"NOTE: {bench.name} has one fidelity: {label} evaluates full trainings only", flush=True)

            def log(info, label=label):
                if lead:
                    wd.record_metrics({"searcher": label, "time": time.time(), **info})

            run = peers.run_peer if isinstance(searcher, peers.Peer) else run_chunked  # a peer: host ask/tell
            h = run(
                searcher,
                objectives[label],
                keys,
                chunk_steps=int(get(cfg, "chunk_steps", 0)),
                ckpt_path=wd.ckpt_path(label),
                fingerprint_extra=extra,
                progress=progress,
                label=label,
                max_chunks=max_chunks,
                on_chunk=log,
                report=bench.report,
                metrics=recorded,
            )
            if h is None:
                interrupted = True
                continue
            if lead:
                wd.save_history(label, h, entries[label])
                if os.path.exists(wd.ckpt_path(label)):  # a run longer than CHECKPOINT_EVERY_S left one
                    os.remove(wd.ckpt_path(label))
        if interrupted:
            return None
        return write_reports(config, wd, bench) if lead else {}


def compile_fresh_runs(wd: Workdir, searchers: dict, objectives: dict, keys, chunk_steps: int, metrics, notice):
    """Compiles the programs of the searchers that have not started in ``wd`` (no history, no checkpoint)
    together, so their compiles overlap (``nas.engine.program_cache``): the default job's three chunk
    programs compile in 1.6 s of wall time on 2 cores instead of 2.3 s one after the other. Host-side peers
    compile their own programs when they run."""
    runs = {
        label: (s, objectives[label])
        for label, s in searchers.items()
        if not isinstance(s, peers.Peer)
        and not os.path.exists(wd.history_path(label))
        and not os.path.exists(wd.ckpt_path(label))
    }
    compile_runs(runs, keys, chunk_steps, metrics, notice)


def objectives_of(bench, recorded: tuple[str, ...], entries: dict[str, dict]) -> dict:
    """Each searcher's objective: ``bench``, or ``bench`` under the entry's constraints
    (``spaces.benchmarks.constrained``); a ConfigError when a metric or constraint does not fit ``bench``."""
    try:
        check_metrics(bench, recorded)
    except ValueError as e:
        raise ConfigError(f"config.metrics / constraints: {e}") from e
    out = {}
    for label, entry in entries.items():
        cons = mo.entry_constraints(entry)
        try:
            out[label] = constrain(bench, cons, entry.get("constraint_mode") or "penalty") if cons else bench
        except ValueError as e:
            raise ConfigError(f"config.searchers.{label}.constraints: {e}") from e
    return out


@contextlib.contextmanager
def open_workdir(wd: Workdir, config, lead: bool):
    """The workdir locked and its config saved, by process 0 (the only process on one host); every
    process learns whether that worked before any of them compiles, so none waits for the others."""
    error = None
    if lead:
        try:
            wd.open()
            wd.check_config(config)  # again under the lock: another run may have started meanwhile
            wd.save_config(config)
        except ConfigError as e:
            wd.close()
            error = e
    if not from_lead(np.bool_(error is None)):
        raise error or ConfigError(f"process 0 could not open --workdir {wd.path}; see its error")
    try:
        yield wd
    finally:
        if lead:
            wd.close()


def write_reports(config, workdir: str | Workdir, bench=None) -> dict:
    """summary.json, results.csv and curves.png from every finished searcher of ``config``."""
    cfg = to_dict(config)
    wd = workdir if isinstance(workdir, Workdir) else Workdir(workdir)
    bench = bench if bench is not None else build_benchmark(config)
    histories, options = {}, {}
    for label, entry in searcher_entries(config).items():
        if os.path.exists(wd.history_path(label)):
            histories[label] = wd.load_history(label)
            options[label] = entry
    if not histories:
        raise ConfigError(f"no finished searcher in {wd.file('history')} to report on")
    summary, curves = rep.build_summary(
        bench, histories, options, int(cfg["max_queries"]), int(get(cfg, "report_every", 10))
    )
    for label, h in histories.items():  # the "never re-query" promise, checked on what was actually queried
        summary["searchers"][label]["repeated_queries"] = count_repeats(bench.space, h["tokens"], h.get("fidelity"))
    entries = searcher_entries(config)
    names, sets = mo.config_metrics(cfg), mo.constraint_sets(entries)
    free = {lb: h for lb, h in histories.items() if not mo.entry_constraints(entries[lb])}
    drawn = None
    if names and free:  # fronts and hypervolume of the unconstrained searchers (nas.experiment.pareto_report)
        summary["pareto"], drawn = mo.pareto_summary(bench, free, names, int(cfg["max_queries"]))
    if sets:  # the incumbent under each constraint: its own searchers and the unconstrained ones
        summary["constraints"] = mo.constraint_summary(bench, histories, entries, sets, int(cfg["max_queries"]))
    rep.write_json(wd.file("summary.json"), summary)
    rep.write_csv(wd.file("results.csv"), summary)
    rep.plot_curves(wd.file("curves.png"), curves, summary, compute=rep.compute_curves(bench, histories, summary))
    if drawn is not None:
        from nas.experiment.pareto_figure import plot_pareto

        plot_pareto(wd.file("pareto.png"), summary, drawn, bench.report)
    return summary
