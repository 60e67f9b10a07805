"""Experiment configs -> benchmark + searchers -> many-seed runs -> reports.

A config (``configs/*.py``, schema in the README) names one benchmark and one
or more searchers (label -> registry name + options) to compare on it.
``validate_config`` checks every name and option before anything is compiled;
``run_experiment`` runs each selected searcher for ``num_trials`` seeds with
the chunked host loop and writes the workdir:

    config.json             the config of the run (a rerun must match it)
    history/<label>.npz     every trial's queries: tokens [T,Q,N], valid, test, cost [T,Q]
    ckpt/<label>.npz        checkpoint while a searcher runs (removed when done)
    metrics.jsonl           one JSON line per chunk and searcher (progress)
    summary.json            per searcher: query counts, mean/std/quantiles, trials
    results.csv             the same table as CSV
    curves.png              best-so-far reported metric vs queries

A rerun with the same workdir skips finished searchers and resumes an
interrupted one from its checkpoint with identical numbers.
"""

from __future__ import annotations

import json
import os
import time

import jax
import numpy as np

from nas import peers
from nas import report as rep
from nas.host_loop import run_chunked
from nas.searcher import Searcher, available_searchers, make_options, searcher_class
from spaces.files import savez_atomic, write_text_atomic
from spaces.names import unknown

REQUIRED = ("benchmark", "protocol", "num_trials", "max_queries", "seed", "searchers")
# config fields -> benchmark loader options
BENCH_OPTIONS = {"test_data": "test_csv", "data_path": "data_path"}
# fields that change what a run computes: a rerun in the same workdir must agree on them
RUN_FIELDS = (
    "benchmark",
    "protocol",
    "test_data",
    "data_path",
    "benchmark_options",
    "num_trials",
    "max_queries",
    "seed",
)


class ConfigError(ValueError):
    """A config that cannot run; the message names the field and the fix."""


def _to_dict(config) -> dict:
    return config.to_dict() if hasattr(config, "to_dict") else dict(config)


def _get(cfg: dict, key: str, default=None):
    v = cfg.get(key, default)
    return default if v is None else v


def searcher_entries(config) -> dict[str, dict]:
    """label -> {"name": registry name, **options}."""
    return {label: dict(entry) for label, entry in _to_dict(config)["searchers"].items()}


def selected_labels(config) -> list[str]:
    cfg = _to_dict(config)
    labels = list(cfg["searchers"])
    only = [s.strip() for s in str(_get(cfg, "only", "")).split(",") if s.strip()]
    bad = [s for s in only if s not in labels]
    if bad:
        raise ConfigError(f"config.only names {bad}, which are not searcher labels of this config: {labels}")
    return [lb for lb in labels if not only or lb in only]


def benchmark_kwargs(cfg: dict) -> dict:
    """Loader options: ``protocol`` where the loader takes one, the mapped fields, ``config.benchmark_options``."""
    from spaces.benchmarks.registry import benchmark_options

    kwargs = {"protocol": cfg["protocol"]} if "protocol" in benchmark_options(cfg["benchmark"]) else {}
    for field, opt in BENCH_OPTIONS.items():
        if _get(cfg, field, ""):
            kwargs[opt] = cfg[field]
    return {**kwargs, **dict(_get(cfg, "benchmark_options", {}))}


def validate_config(config) -> None:
    """Fails with a clear message on anything that would fail later (before any compile)."""
    from spaces.benchmarks.registry import available_benchmarks, benchmark_options

    cfg = _to_dict(config)
    missing = [k for k in REQUIRED if k not in cfg]
    if missing:
        raise ConfigError(f"config lacks field(s) {missing}; see configs/default.py for the schema")
    name = cfg["benchmark"]
    if name not in available_benchmarks():
        raise ConfigError(f"config.benchmark: {unknown('benchmark', name, available_benchmarks())}")
    allowed = benchmark_options(name)
    if "protocol" in allowed and cfg["protocol"] not in ("mean", "random"):
        raise ConfigError(f"config.protocol must be 'mean' or 'random', got {cfg['protocol']!r}")
    bad = [k for k in dict(_get(cfg, "benchmark_options", {})) if k not in allowed or k == "protocol"]
    if bad:
        raise ConfigError(
            f"config.benchmark_options: benchmark {name!r} has no option(s) {bad}; its options: {allowed}"
        )
    for field, opt in BENCH_OPTIONS.items():
        value = _get(cfg, field, "")
        if not value:
            continue
        if opt not in allowed:
            raise ConfigError(f"config.{field} is set but benchmark {name!r} takes no {opt!r} (its options: {allowed})")
        if not os.path.exists(value):
            raise ConfigError(f"config.{field}: file not found: {value}")
    for field in ("num_trials", "max_queries"):
        if int(cfg[field]) < 1:
            raise ConfigError(f"config.{field} must be >= 1, got {cfg[field]}")
    if not cfg["searchers"]:
        raise ConfigError("config.searchers is empty: name at least one searcher")
    for label in searcher_entries(config):
        searcher_options_of(config, label)
    selected_labels(config)


def searcher_options_of(config, label: str):
    """The options dataclass of searcher ``label`` (config entry + the config's budget), or a ConfigError."""
    entry = searcher_entries(config)[label]
    sname = entry.get("name")
    names = available_searchers() + peers.available_peers()  # peers: host-side baselines (nas/peers.py)
    if sname not in names:
        raise ConfigError(f"config.searchers.{label}.name: {unknown('searcher', sname, names)}")
    opts = {k: v for k, v in entry.items() if k != "name"}
    if "max_queries" in opts:
        raise ConfigError(f"config.searchers.{label}: set the budget with config.max_queries, not per searcher")
    make = peers.make_peer_options if sname in peers.PEERS else make_options
    try:
        return make(sname, max_queries=int(_to_dict(config)["max_queries"]), **opts)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"config.searchers.{label}: {e}") from e


def build_benchmark(config):
    from spaces.benchmarks.registry import make_benchmark

    cfg = _to_dict(config)
    return make_benchmark(cfg["benchmark"], **benchmark_kwargs(cfg))


def build_searcher(config, label: str, space) -> Searcher:
    """Searcher ``label`` of ``config`` on ``space`` (a ConfigError when its options do not fit the space)."""
    options = searcher_options_of(config, label)
    name = searcher_entries(config)[label]["name"]
    if name in peers.PEERS:
        return peers.Peer(name, space, options)
    try:
        return searcher_class(name)(space, options)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"config.searchers.{label}: {e}") from e


def trial_keys(config) -> jax.Array:
    cfg = _to_dict(config)
    return jax.random.split(jax.random.PRNGKey(int(cfg["seed"])), int(cfg["num_trials"]))


def check_workdir_config(workdir: str, config) -> None:
    """A workdir holds one run: a rerun must agree on what the numbers mean."""
    path = os.path.join(workdir, "config.json")
    if not os.path.exists(path):
        return
    with open(path) as f:
        old = json.load(f)
    new = json.loads(json.dumps(_to_dict(config)))
    diffs = [f"{k}: {old.get(k)!r} -> {new.get(k)!r}" for k in RUN_FIELDS if old.get(k) != new.get(k)]
    for label, entry in new["searchers"].items():
        if label in old.get("searchers", {}) and old["searchers"][label] != entry:
            diffs.append(f"searchers.{label}: {old['searchers'][label]} -> {entry}")
    if diffs:
        raise ConfigError(
            f"workdir {workdir} holds a run with a different config; resuming it would mix results.\n  "
            + "\n  ".join(diffs)
            + "\nUse a new --workdir, or delete this one to start over."
        )


HISTORY_FIELDS = ("tokens", "score", "report_score", "cost")


def _history_arrays(h) -> dict[str, np.ndarray]:
    return {k: np.asarray(getattr(h, k)) for k in HISTORY_FIELDS}


def record_metrics(path: str, line: dict) -> None:
    """Adds one chunk's line to ``metrics.jsonl``, replacing an earlier line of the same searcher and step
    (a chunk rerun after a kill writes its line again; the file never holds it twice)."""
    kept = []
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for raw in f.read().splitlines(keepends=True):
                if not raw.endswith("\n"):
                    continue  # a partial line from an interrupted non-atomic writer
                try:
                    old = json.loads(raw)
                except json.JSONDecodeError:
                    continue
                if (old.get("searcher"), old.get("step")) != (line["searcher"], line["step"]):
                    kept.append(raw)
    write_text_atomic(path, "".join(kept) + json.dumps(rep.clean(line)) + "\n")


def run_experiment(config, workdir: str, progress: bool = True, max_chunks: int | None = None) -> dict | None:
    """Runs the selected searchers into ``workdir`` and writes the reports.

    Everything is validated and built (objective, searchers) before the workdir
    is touched. ``max_chunks`` stops each unfinished searcher after that many
    chunks (an interruption, for tests); the function then returns None before
    writing the reports.
    """
    validate_config(config)
    cfg = _to_dict(config)
    check_workdir_config(workdir, config)
    bench = build_benchmark(config)
    searchers = {label: build_searcher(config, label, bench.space) for label in selected_labels(config)}
    keys = trial_keys(config)
    entries = searcher_entries(config)
    os.makedirs(os.path.join(workdir, "history"), exist_ok=True)
    os.makedirs(os.path.join(workdir, "ckpt"), exist_ok=True)
    rep.write_json(os.path.join(workdir, "config.json"), cfg)
    metrics_path = os.path.join(workdir, "metrics.jsonl")
    interrupted = False
    for label, searcher in searchers.items():
        hist_path = os.path.join(workdir, "history", f"{label}.npz")
        if os.path.exists(hist_path):
            print(f"{label}: finished earlier, skipped ({hist_path})", flush=True)
            continue
        extra = json.dumps({"entry": entries[label], **{k: cfg.get(k) for k in RUN_FIELDS}}, sort_keys=True)

        def log(info, label=label):
            record_metrics(metrics_path, {"searcher": label, "time": time.time(), **info})

        ckpt = os.path.join(workdir, "ckpt", f"{label}.npz")
        run = peers.run_peer if isinstance(searcher, peers.Peer) else run_chunked
        h = run(
            searcher,
            bench,
            keys,
            chunk_steps=int(_get(cfg, "chunk_steps", 0)),
            ckpt_path=ckpt,
            fingerprint_extra=extra,
            progress=progress,
            label=label,
            max_chunks=max_chunks,
            on_chunk=log,
            report=bench.report,
        )
        if h is None:
            interrupted = True
            continue
        savez_atomic(hist_path, {**_history_arrays(h), "entry": np.asarray(json.dumps(entries[label]))})
        os.remove(ckpt)
    if interrupted:
        return None
    return write_reports(config, workdir, bench)


def write_reports(config, workdir: str, bench=None) -> dict:
    """summary.json, results.csv and curves.png from every finished searcher of ``config``."""
    cfg = _to_dict(config)
    bench = bench if bench is not None else build_benchmark(config)
    histories, options = {}, {}
    for label, entry in searcher_entries(config).items():
        path = os.path.join(workdir, "history", f"{label}.npz")
        if os.path.exists(path):
            with np.load(path) as z:
                histories[label] = {"score": z["score"], "report_score": z["report_score"]}
            options[label] = entry
    if not histories:
        raise ConfigError(f"no finished searcher in {workdir}/history to report on")
    summary, curves = rep.build_summary(
        bench, histories, options, int(cfg["max_queries"]), int(_get(cfg, "report_every", 10))
    )
    rep.write_json(os.path.join(workdir, "summary.json"), summary)
    rep.write_csv(os.path.join(workdir, "results.csv"), summary)
    rep.plot_curves(os.path.join(workdir, "curves.png"), curves, summary)
    return summary
