"""The fields of an experiment config (``nas.experiment.config`` describes them), checked and read.

``check_config_fields`` refuses a field that would fail later (the benchmark and its options, a data
file that is not there, a budget or seed that is not a whole number, malformed metrics) with a
``ConfigError`` naming the field and the fix; ``with_data_files`` fills in the public data files found
for the fields a config leaves empty; ``build_benchmark`` loads the objective the fields describe.
The searchers' entries are checked by ``nas.experiment.searcher_plan``.
"""

from __future__ import annotations

import os
import re

from spaces.benchmarks.protocols import PROTOCOLS, ProtocolError
from spaces.files import DataError
from spaces.names import unknown

REQUIRED = ("benchmark", "protocol", "num_trials", "max_queries", "seed", "searchers")
# config fields -> benchmark loader options
BENCH_OPTIONS = {"test_data": "test_csv", "data_path": "data_path", "fidelity_data": "fidelity_data"}
# fields that change what a run computes: a rerun in the same workdir must agree on them
RUN_FIELDS = (
    "benchmark",
    "protocol",
    "test_data",
    "data_path",
    "fidelity_data",
    "benchmark_options",
    "metrics",
    "num_trials",
    "max_queries",
    "seed",
)
LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")  # a label names files under the workdir


class ConfigError(ValueError):
    """A config that cannot run; the message names the field and the fix."""


def to_dict(config) -> dict:
    return config.to_dict() if hasattr(config, "to_dict") else dict(config)


def get(cfg: dict, key: str, default=None):
    v = cfg.get(key, default)
    return default if v is None else v


def searcher_entries(config) -> dict[str, dict]:
    """label -> {"name": registry name, **options}."""
    return {label: dict(entry) for label, entry in to_dict(config)["searchers"].items()}


def selected_labels(config) -> list[str]:
    cfg = to_dict(config)
    labels = list(cfg["searchers"])
    only = [s.strip() for s in str(get(cfg, "only", "")).split(",") if s.strip()]
    bad = [s for s in only if s not in labels]
    if bad:
        raise ConfigError(f"config.only names {bad}, which are not searcher labels of this config: {labels}")
    return [lb for lb in labels if not only or lb in only]


def benchmark_kwargs(cfg: dict) -> dict:
    """The loader options the config sets (``protocol`` only for loaders that take one)."""
    from spaces.benchmarks.registry import benchmark_options

    allowed = benchmark_options(cfg["benchmark"])
    kwargs = {"protocol": cfg["protocol"]} if "protocol" in allowed else {}
    for field, opt in BENCH_OPTIONS.items():
        if get(cfg, field, ""):
            kwargs[opt] = cfg[field]
    return {**kwargs, **dict(get(cfg, "benchmark_options", {}))}


def check_int(cfg: dict, field: str, low: int, what: str) -> None:
    value = cfg.get(field, low)
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ConfigError(f"config.{field} must be an integer {what}, got {value!r}")


def check_config_fields(cfg: dict) -> None:
    """The benchmark, its options and data files, the budgets and the metrics of ``cfg``, or a ConfigError."""
    from spaces.benchmarks.registry import available_benchmarks, benchmark_options

    missing = [k for k in REQUIRED if k not in cfg]
    if missing:
        raise ConfigError(f"config lacks field(s) {missing}; see configs/default.py for the schema")
    name = cfg["benchmark"]
    if name not in available_benchmarks():
        raise ConfigError(f"config.benchmark: {unknown('benchmark', name, available_benchmarks())}")
    if cfg["protocol"] not in PROTOCOLS:
        raise ConfigError(f"config.protocol must be one of {list(PROTOCOLS)}, got {cfg['protocol']!r}")
    allowed = benchmark_options(name)
    bad = [k for k in dict(get(cfg, "benchmark_options", {})) if k not in allowed or k == "protocol"]
    if bad:
        raise ConfigError(
            f"config.benchmark_options: benchmark {name!r} has no option(s) {bad}; its options: {allowed}"
        )
    for field, opt in BENCH_OPTIONS.items():
        value = get(cfg, field, "")
        if not value:
            continue
        if opt not in allowed:
            raise ConfigError(f"config.{field} is set but benchmark {name!r} takes no {opt!r} (its options: {allowed})")
        if not os.path.exists(value):
            raise ConfigError(f"config.{field}: file not found: {value}.{_public_file_hint(name, opt)}")
    check_int(cfg, "num_trials", 1, ">= 1")
    check_int(cfg, "max_queries", 1, ">= 1")
    check_int(cfg, "seed", 0, ">= 0 (a seed)")
    check_int(cfg, "report_every", 1, ">= 1 (a query count)")
    check_int(cfg, "chunk_steps", 0, ">= 0 (0 = about 10 chunks per run)")
    value = cfg.get("metrics") or ()
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, (list, tuple)) or not all(isinstance(v, str) for v in names):
        raise ConfigError(
            f"config.metrics must be metric names, e.g. ('latency',) or 'latency,model_size', got {value!r}"
        )


def _public_file_hint(benchmark: str, option: str) -> str:
    """`` <where the file comes from>`` when option ``option`` of ``benchmark`` reads a public file, else ''."""
    from spaces.benchmarks.data_files import missing_hint
    from spaces.benchmarks.registry import data_file_key

    key = data_file_key(benchmark, option)
    return f" {missing_hint(key)}" if key else ""


def with_data_files(config):
    """``(config, found)``: ``config`` with each file field left empty (``test_data``, ``data_path``) set to
    the public file found for it in the data directory (``spaces.benchmarks.data_files``), as a plain
    dict when one is found (a ``ConfigDict`` copy would sort the searchers); ``found`` maps those fields
    to their paths. A run saves this config, so its workdir records the file it read (and a rerun after
    the file appears or goes is refused, not mixed)."""
    from spaces.benchmarks.registry import found_data_files

    cfg = to_dict(config)
    found = found_data_files(cfg["benchmark"], **benchmark_kwargs(cfg))
    fields = {opt: field for field, opt in BENCH_OPTIONS.items()}
    # an option with no config field of its own is filled by make_benchmark alone
    out = {fields[opt]: path for opt, path in found.items() if opt in fields}
    return ({**cfg, **out}, out) if out else (config, {})


def build_benchmark(config, kwargs: dict | None = None):
    """The config's objective; a loader's refusal of an option value is a ConfigError naming the benchmark
    and the options it was given (a data file's problem stays a DataError). ``kwargs``: the loader options
    when the caller has them (a run plan), else ``benchmark_kwargs`` of the config."""
    from spaces.benchmarks.registry import make_benchmark

    cfg = to_dict(config)
    kwargs = benchmark_kwargs(cfg) if kwargs is None else kwargs
    try:
        return make_benchmark(cfg["benchmark"], **kwargs)
    except DataError:
        raise
    except ProtocolError as e:
        raise ConfigError(f"config.protocol={cfg['protocol']!r}: {e}") from e
    except (TypeError, ValueError) as e:
        given = {k: v for k, v in kwargs.items() if k != "protocol"}
        raise ConfigError(f"config.benchmark {cfg['benchmark']!r} with options {given}: {e}") from e
