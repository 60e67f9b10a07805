"""Experiment configs -> a run plan -> many-seed runs -> reports.

``run_experiment(config, workdir)`` makes the run plan (``nas.experiment.plan``: every field,
searcher option and budget checked, each searcher's options built once) and runs it
(``run_plan``): the objective and every searcher are built, and only then is the workdir opened
(``nas.experiment.workdir``: created, locked, its config checked). Each selected searcher runs
``num_trials`` seeds with the chunked loop (``nas.engine.chunked_loop``), or a peer with its own
Python loop (``nas.experiment.peers``; the plan says which); finished searchers are kept, an
interrupted one resumes from its checkpoint with identical numbers; at the end the reports are
written (``nas.experiment.report``: summary.json, results.csv, curves.png).

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
from nas.engine.chunked_loop import compile_runs, run_chunked
from nas.engine.devices import from_lead, is_lead
from nas.experiment import multiobjective as mo
from nas.experiment import report as rep
from nas.experiment.config import RUN_FIELDS, ConfigError, validate_config
from nas.experiment.peers import run_peer
from nas.experiment.plan import RunPlan, make_plan
from nas.experiment.registry import repeats_reason
from nas.experiment.workdir import Workdir
from spaces.benchmarks.constrained import constrain
from spaces.benchmarks.metrics import check_metrics
from spaces.benchmarks.objective import fidelity_budgets

__all__ = ["ConfigError", "run_experiment", "run_plan", "write_reports", "validate_config", "run_report"]


def build_benchmark(plan: RunPlan):
    """The plan's objective (a module-level step, so a profile can wrap it: scripts/bench/bench_startup.py)."""
    return plan.load_benchmark()


def run_experiment(config, workdir: str, progress: bool = True, max_chunks: int | None = None) -> dict | None:
    """Runs the selected searchers of ``config`` into ``workdir`` and writes the reports (``run_plan`` of
    ``make_plan(config, workdir)``).

    Everything is validated and built (objective, searchers) before the workdir
    is touched. ``max_chunks`` stops each unfinished searcher after that many
    chunks (an interruption, for tests); the function then returns None before
    writing the reports.
    """
    return run_plan(make_plan(config, workdir), progress, max_chunks)


def run_plan(plan: RunPlan, progress: bool = True, max_chunks: int | None = None) -> dict | None:
    """Runs ``plan`` (``nas.experiment.plan.make_plan``) into its workdir; ``run_experiment``'s contract."""
    wd = Workdir(plan.workdir)
    wd.check_config(plan.config)
    bench = build_benchmark(plan)
    searchers = plan.build_searchers(bench)
    keys = plan.trial_keys()
    objectives = objectives_of(bench, plan.recorded, {label: plan.entries[label] for label in searchers})
    lead = is_lead()
    for field, path in plan.data_files.items():
        if lead:
            print(f"config.{field}: {path} (found in the data directory)", flush=True)
    with open_workdir(wd, plan, lead):
        if max_chunks is None and jax.process_count() == 1:
            compile_fresh_runs(wd, plan, searchers, objectives, keys, progress)
        interrupted = False
        fields = {k: plan.config.get(k) for k in RUN_FIELDS if k != "metrics"}  # the runner adds the recorded ones
        for label, searcher in searchers.items():
            if from_lead(np.bool_(lead and os.path.exists(wd.history_path(label)))):
                if lead:
                    print(f"{label}: finished earlier, skipped ({wd.history_path(label)})", flush=True)
                continue
            entry = plan.entries[label]
            extra = json.dumps({"entry": entry, **fields}, sort_keys=True)
            if lead and hasattr(searcher, "schedule"):  # a multi-fidelity schedule, said once
                print(searcher.schedule(getattr(bench, "fidelity_unit", "")), flush=True)
                if len(fidelity_budgets(bench)) == 1:
                    print(f"NOTE: {bench.name} has one fidelity: {label} evaluates full trainings only", flush=True)

            def log(info, label=label):
                if lead:
                    wd.record_metrics({"searcher": label, "time": time.time(), **info})

            run = run_peer if plan.searchers[label].runs_on_host else run_chunked
            h = run(
                searcher,
                objectives[label],
                keys,
                chunk_steps=plan.chunk_steps,
                ckpt_path=wd.ckpt_path(label),
                fingerprint_extra=extra,
                progress=progress,
                label=label,
                max_chunks=max_chunks,
                on_chunk=log,
                report=bench.report,
                metrics=plan.recorded,
            )
            if h is None:
                interrupted = True
                continue
            if lead:
                wd.save_history(label, h, entry)
                if os.path.exists(wd.ckpt_path(label)):  # a run longer than CHECKPOINT_EVERY_S left one
                    os.remove(wd.ckpt_path(label))
        if interrupted:
            return None
        return write_reports(plan, wd, bench) if lead else {}


def compile_fresh_runs(wd: Workdir, plan: RunPlan, searchers: dict, objectives: dict, keys, notice):
    """Compiles the programs of the searchers that have not started in ``wd`` (no history, no checkpoint)
    together, so their compiles overlap (``nas.engine.program_cache``): the default job's three chunk
    programs compile in 1.6 s of wall time on 2 cores instead of 2.3 s one after the other. Peers, which
    run on the host, compile their own programs when they run."""
    runs = {
        label: (s, objectives[label])
        for label, s in searchers.items()
        if not plan.searchers[label].runs_on_host
        and not os.path.exists(wd.history_path(label))
        and not os.path.exists(wd.ckpt_path(label))
    }
    compile_runs(runs, keys, plan.chunk_steps, plan.recorded, notice)


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
def open_workdir(wd: Workdir, plan: RunPlan, lead: bool):
    """The workdir locked and the plan's config saved, by process 0 (the only process on one host); every
    process learns whether that worked before any of them compiles, so none waits for the others."""
    error = None
    if lead:
        try:
            wd.open()
            wd.check_config(plan.config)  # again under the lock: another run may have started meanwhile
            wd.save_config(plan.config)
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


def write_reports(plan: RunPlan, workdir: str | Workdir | None = None, bench=None) -> dict:
    """summary.json, results.csv and curves.png from every finished searcher of ``plan`` (a config is
    made into its plan first); ``workdir``: the plan's unless given."""
    plan = plan if isinstance(plan, RunPlan) else make_plan(plan, workdir)
    wd = workdir if isinstance(workdir, Workdir) else Workdir(workdir or plan.workdir)
    bench = bench if bench is not None else build_benchmark(plan)
    histories, options = {}, {}
    for label, entry in plan.entries.items():
        if os.path.exists(wd.history_path(label)):
            histories[label] = wd.load_history(label)
            options[label] = entry
    if not histories:
        raise ConfigError(f"no finished searcher in {wd.file('history')} to report on")
    summary, curves = rep.build_summary(bench, histories, options, plan.max_queries, plan.report_every)
    for label, h in histories.items():  # the "never re-query" promise, checked on what was actually queried
        summary["searchers"][label]["repeated_queries"] = count_repeats(bench.space, h["tokens"], h.get("fidelity"))
    entries = plan.entries
    names, sets = plan.metrics, mo.constraint_sets(entries)
    free = {lb: h for lb, h in histories.items() if not mo.entry_constraints(entries[lb])}
    drawn = None
    if names and free:  # fronts and hypervolume of the unconstrained searchers (nas.experiment.pareto_report)
        summary["pareto"], drawn = mo.pareto_summary(bench, free, names, plan.max_queries)
    if sets:  # the incumbent under each constraint: its own searchers and the unconstrained ones
        summary["constraints"] = mo.constraint_summary(bench, histories, entries, sets, plan.max_queries)
    rep.write_json(wd.file("summary.json"), summary)
    rep.write_csv(wd.file("results.csv"), summary)
    rep.plot_curves(wd.file("curves.png"), curves, summary, compute=rep.compute_curves(bench, histories, summary))
    if drawn is not None:
        from nas.experiment.pareto_figure import plot_pareto

        plot_pareto(wd.file("pareto.png"), summary, drawn, bench.report)
    return summary


def run_report(summary: dict, workdir: str) -> str:
    """What ``scripts.train`` prints after a run: the table (and the fronts' and constraints' tables of a
    multi-objective or constrained run), a warning for each searcher that queried a configuration twice
    (with the registered searcher's reason), a note when the figures are validation figures, the outputs."""
    lines = [rep.format_table(summary)]
    if "pareto" in summary or "constraints" in summary:  # multi-objective and constrained runs
        lines.append(mo.format_pareto_table(summary) if "pareto" in summary else "")
        lines.append(mo.format_constraint_table(summary) if "constraints" in summary else "")
    for label, s in summary["searchers"].items():
        if s.get("repeated_queries"):
            entry = s.get("options", {})
            why = repeats_reason(entry["name"], entry) if "name" in entry else "the space is nearly exhausted"
            lines.append(f"WARNING: {label} queried {s['repeated_queries']} configurations twice ({why})")
    if summary["split"] == "validation":
        hint = rep.missing_test_data_hint(summary["benchmark"])
        lines.append(f"NOTE: no test split given; these are VALIDATION figures ({hint}).")
    extra = ", pareto.png" if "pareto" in summary else ""
    lines.append(f"outputs in {workdir}: summary.json, results.csv, curves.png{extra}, history/, metrics.jsonl")
    return "\n".join(lines)
