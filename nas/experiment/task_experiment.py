"""Experiments on a training task: searchers x seeds on a language task, each architecture really trained.

A config (``configs/language_search.py``) has the fields of ``nas.experiment.config`` that a
search through the tuner (``nas.host``) needs, with ``task`` in place of ``benchmark``::

    task          a language task (spaces.language.tasks: digits_cnn, diabetes_mlp, genetic_digits, genetic)
    dataset       optional data set in place of the task's (digits, diabetes, cifar10)
    space         optional size options of the task's space (channel widths, nodes per stage, ...)
    train         TrainConfig overrides (epochs, batch_size, learning_rate, max_group)
    num_trials    seeds per searcher
    max_queries   architectures trained per run
    seed          the root seed: trial i of every searcher uses seed + i (also its training seed)
    report_every  query counts of the summary table
    only          comma-separated searcher labels to run ("" = all)
    searchers     label -> {"name": registered searcher, **its options} (searcher_configs)

``run_task_experiment`` runs each (searcher, trial) with ``nas.host.task_search.run_task_search``
and saves it as ``runs/<label>_<trial>.npz`` (a rerun in the same workdir skips saved runs),
then writes ``summary.json``: per searcher and budget, the mean and standard error over trials
of the incumbent's validation score and of its test score, architectures trained, wall time.
One ``Trainer`` serves the whole experiment, so an architecture that two searchers propose with
the same seed is trained once (memo) and compiled programs are shared.
"""

from __future__ import annotations

import json
import os
import time

import numpy as np

from nas.engine.budget import BudgetError, check_space
from nas.experiment.config_fields import ConfigError, check_int, get, to_dict
from nas.experiment.searcher_plan import SearcherPlan, check_selected
from nas.host.task_search import incumbent_curves, run_task_search
from spaces.data_files import read_json, read_npz
from spaces.files import savez_atomic, write_text_atomic

REQUIRED = ("task", "num_trials", "max_queries", "seed", "searchers")
RENAMED = {"validate_host_config": "validate_task_config", "run_host_experiment": "run_task_experiment"}  # 0.3
RUN_FIELDS = ("tokens", "valid", "test", "cost", "wall_s")  # what every saved run holds


def validate_task_config(config) -> dict[str, SearcherPlan]:
    """One-line ``ConfigError`` for anything that would fail later (before any training); returns the
    selected searchers' plans (options built once, budgets: ``nas.experiment.config.SearcherPlan``)."""
    from spaces.language.datasets import TASKS as DATASETS
    from spaces.language.tasks import available_tasks, space_options
    from spaces.language.training import TrainConfig
    from spaces.names import unknown

    cfg = to_dict(config)
    missing = [k for k in REQUIRED if k not in cfg]
    if missing:
        raise ConfigError(f"config lacks field(s) {missing}; see configs/language_search.py for the schema")
    if cfg["task"] not in available_tasks():
        raise ConfigError(f"config.task: {unknown('language task', cfg['task'], available_tasks())}")
    if get(cfg, "dataset", "") and cfg["dataset"] not in DATASETS:
        raise ConfigError(f"config.dataset: {unknown('data set', cfg['dataset'], list(DATASETS))}")
    bad = sorted(set(dict(get(cfg, "space", {}))) - set(space_options(cfg["task"])))
    if bad:
        raise ConfigError(
            f"config.space has unknown option(s) {bad}; task {cfg['task']!r}: {space_options(cfg['task'])}"
        )
    fields = set(TrainConfig.__dataclass_fields__)
    train = dict(get(cfg, "train", {}))
    bad = sorted(set(train) - fields)
    if bad:
        raise ConfigError(f"config.train has unknown field(s) {bad}; TrainConfig fields: {sorted(fields)}")
    try:
        TrainConfig(**train)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"config.train: {e}") from e
    check_int(cfg, "num_trials", 1, ">= 1")
    check_int(cfg, "max_queries", 1, ">= 1")
    check_int(cfg, "seed", 0, ">= 0 (a seed)")
    check_int(cfg, "report_every", 1, ">= 1 (a query count)")
    return check_selected(config, seed_span=int(cfg["num_trials"]))  # trial i runs with seed + i


def run_task_experiment(config, workdir: str, log=print, searchers: dict[str, SearcherPlan] | None = None) -> dict:
    """Runs every selected searcher ``num_trials`` times; returns (and writes) the summary. ``searchers``:
    the plans ``validate_task_config(config)`` returned, when the caller validated first (not checked again)."""
    import dataclasses

    from spaces.language.tasks import make_task

    searchers = validate_task_config(config) if searchers is None else searchers
    cfg = to_dict(config)
    space, dataset = dict(get(cfg, "space", {})), get(cfg, "dataset", "")
    task = make_task(cfg["task"], dataset=dataset, space=space, **dict(get(cfg, "train", {})))
    for plan in searchers.values():  # the budget against the task's space, before any training
        try:
            check_space(plan.budget, task.space)
        except BudgetError as e:
            raise ConfigError(str(e)) from e
    os.makedirs(os.path.join(workdir, "runs"), exist_ok=True)
    check_workdir(cfg, workdir)
    q, every = int(cfg["max_queries"]), int(get(cfg, "report_every", 8))
    budgets = sorted({min(b, q) for b in range(every, q + every, every)})
    summary = {
        "task": cfg["task"],
        "report": task.report_name,
        "train": dataclasses.asdict(task.trainer.cfg),
        "max_queries": q,
        "budgets": budgets,
        "searchers": {},
    }
    for label, plan in searchers.items():
        options = dataclasses.asdict(plan.options)
        options.pop("max_queries")
        runs = []
        for trial in range(int(cfg["num_trials"])):
            path = os.path.join(workdir, "runs", f"{label}_{trial}.npz")
            if os.path.exists(path):
                runs.append(read_npz(path, f"delete it to run trial {trial} of {label} again", RUN_FIELDS))
                continue
            seed = int(cfg["seed"]) + trial
            t0 = time.perf_counter()
            run = run_task_search(task.evaluate, task.space, plan.name, seed, q, **options)
            savez_atomic(path, run)
            runs.append(run)
            best = np.max(np.where(np.isfinite(run["valid"]), run["valid"], -np.inf))
            log(f"{label} trial {trial}: best valid {best:.4f} in {time.perf_counter() - t0:.1f}s")
        summary["searchers"][label] = summarize(runs, budgets, task)
    summary["trainer"] = {k: round(float(v), 3) for k, v in task.trainer.stats.items()}
    write_text_atomic(os.path.join(workdir, "summary.json"), json.dumps(summary, indent=1))
    return summary


def _se(x) -> float:
    return float(np.std(x, ddof=1) / np.sqrt(len(x))) if len(x) > 1 else 0.0


def check_workdir(cfg: dict, workdir: str) -> None:
    """Saved runs are reused only by the same config (task, data set, space, training, budget, seed, searchers)."""
    path = os.path.join(workdir, "config.json")
    fields = ("task", "train", "max_queries", "seed", "searchers") + tuple(
        k for k in ("dataset", "space") if cfg.get(k)
    )
    mine = {k: cfg.get(k) for k in fields}
    mine = json.loads(json.dumps(mine, sort_keys=True, default=str))
    if os.path.exists(path):
        theirs = read_json(path, "delete the workdir to start over, or restore the file")
        if theirs != mine:
            diff = sorted(k for k in mine if mine[k] != theirs.get(k))
            raise ConfigError(
                f"workdir {workdir} holds runs of another config (fields {diff} differ); use a new --workdir"
            )
        return
    write_text_atomic(path, json.dumps(mine, indent=1, sort_keys=True))


def summarize(runs: list[dict], budgets: list[int], task) -> dict:
    curves = [incumbent_curves(r["valid"], r["test"]) for r in runs]
    out = {"trials": len(runs), "at": {}}
    for b in budgets:
        v = np.asarray([c[0][b - 1] for c in curves], np.float64)
        t = np.asarray([c[1][b - 1] for c in curves], np.float64)
        out["at"][b] = {
            "valid": float(np.mean(v)),
            "valid_se": _se(v),
            "test": float(np.mean(t)),
            "test_se": _se(t),
            "reported": float(np.mean(task.report(t))),
            "reported_se": _se(task.report(t)),
        }
    out["failed"] = int(sum(np.sum(~np.isfinite(r["valid"])) for r in runs))
    out["wall_s"] = float(np.mean([r["wall_s"][-1] for r in runs]))
    return out


def format_summary(summary: dict) -> str:
    """A text table: per searcher, the incumbent's test metric (mean +- s.e.) at each budget."""
    budgets = summary["budgets"]
    head = f"{summary['task']}: {summary['report']} of the best-validation architecture (mean +- s.e. over trials)"
    lines = [head, "searcher".ljust(24) + "".join(f"{b:>16}" for b in budgets) + "    wall s/run"]
    for label, s in summary["searchers"].items():
        cells = "".join(f"{s['at'][b]['reported']:>9.2f} +- {s['at'][b]['reported_se']:<4.2f}" for b in budgets)
        lines.append(label.ljust(24) + cells + f"    {s['wall_s']:.0f}")
    return "\n".join(lines)


def __getattr__(name: str):
    """The names of 0.2 (``nas.experiment.host_experiment``), for one release, with a DeprecationWarning."""
    if name in RENAMED:
        import warnings

        warnings.warn(f"{__name__}.{name} is now {__name__}.{RENAMED[name]}", DeprecationWarning, stacklevel=2)
        return globals()[RENAMED[name]]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
