"""Experiment configs: their schema, their validation, and the objects they build.

A config (``configs/*.py``, an ``ml_collections.ConfigDict`` from
``get_config(arg)``) names one benchmark and the searchers to compare on it::

    benchmark     registered benchmark name (spaces.benchmarks.registry)
    protocol      "mean" | "random" | "random_run" (tables with seeds, spaces.benchmarks.protocols;
                  ignored by objectives without)
    test_data     optional file of test scores (NB201's test CSV)
    data_path     optional data file (NB-101's TFRecord, UCI folders, ...)
                  (test_data, data_path: "" = the file in the data directory, if there: ``with_data_files``)
    fidelity_data optional file of low-fidelity scores (NB201's 12-epoch table; never looked up)
    benchmark_options  optional dict of further loader options (e.g. the MLP objective's ``split``)
    num_trials    seeds per searcher
    max_queries   the budget of every trial, in full evaluations (a single-fidelity searcher's queries;
                  a multi-fidelity searcher spends ``max_queries`` times the top budget)
    seed          the root seed (trial keys are split from it)
    report_every  query counts of the summary table (every k queries)
    chunk_steps   steps per compiled chunk (0 = about 10 chunks)
    only          comma-separated searcher labels to run ("" = all)
    searchers     label -> {"name": registered searcher or peer (nas.experiment.peers), **its options};
                  multi-fidelity searchers (nas.core.multi_fidelity) take the benchmark's fidelities
                  and may sit beside single-fidelity ones; an entry may add "constraints" and
                  "constraint_mode" (nas.experiment.multiobjective)
    metrics       optional: the objective's metrics searched beside the score, e.g. ("latency",)
                  (multi-objective searchers and reports: nas.experiment.multiobjective)

``searcher_configs`` builds ``config.searchers`` with every option of each
searcher listed (defaults filled in), so any option can be overridden on the
command line (``--config.searchers.<label>.<option>=value``).
``validate_config`` checks every name, option and value before anything is
built or compiled and returns each selected searcher's ``SearcherPlan`` (its
options built once, its budget); errors are ``ConfigError`` with one line naming
the field and the fix. ``nas.experiment.plan`` makes the whole run plan from it.
"""

from __future__ import annotations

import dataclasses
import os
import re

import jax
import ml_collections

from nas.core.contract import Searcher
from nas.core.options import SearcherOptions
from nas.engine.budget import Budget, BudgetError, check_fields, check_memory, check_space
from nas.experiment import registry
from nas.experiment.multiobjective import ENTRY_FIELDS, config_metrics, entry_constraints
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


def searcher_configs(**entries: dict) -> ml_collections.ConfigDict:
    """``config.searchers`` from ``label={"name": registered searcher, **options}``.

    Each entry lists every option of its searcher, the given ones and the
    defaults of the rest (the budget comes from ``config.max_queries``), so the
    config file shows what runs and the command line can override any option.
    """
    out = {}
    for label, entry in entries.items():
        entry = dict(entry)
        name = entry.pop("name", None)
        extra = {k: entry.pop(k) for k in ENTRY_FIELDS if k in entry}  # read by the experiment, not the searcher
        names = registry.available()
        if name not in names:
            raise ConfigError(f"searchers.{label}.name: {unknown('searcher', name, names)}")
        try:
            options = registry.make_entry_options(name, **entry)
        except (TypeError, ValueError) as e:
            raise ConfigError(f"searchers.{label}: {e}") from e
        values = {k: v for k, v in dataclasses.asdict(options).items() if k != "max_queries"}
        out[label] = {"name": name, **values, **extra}
    return ml_collections.ConfigDict(out, sort_keys=False)  # run and report in the order given


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


def _check_int(cfg: dict, field: str, low: int, what: str) -> None:
    value = cfg.get(field, low)
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ConfigError(f"config.{field} must be an integer {what}, got {value!r}")


def validate_config(config) -> dict[str, SearcherPlan]:
    """Fails with a clear message on anything that would fail later (before any compile); returns the
    selected searchers' plans (``check_selected``).

    Only the selected searchers (``config.only``) are checked: another searcher's option never stops a run.
    """
    check_config_fields(to_dict(config))
    return check_selected(config)


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
    _check_int(cfg, "num_trials", 1, ">= 1")
    _check_int(cfg, "max_queries", 1, ">= 1")
    _check_int(cfg, "seed", 0, ">= 0 (a seed)")
    _check_int(cfg, "report_every", 1, ">= 1 (a query count)")
    _check_int(cfg, "chunk_steps", 0, ">= 0 (0 = about 10 chunks per run)")
    value = cfg.get("metrics") or ()
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, (list, tuple)) or not all(isinstance(v, str) for v in names):
        raise ConfigError(
            f"config.metrics must be metric names, e.g. ('latency',) or 'latency,model_size', got {value!r}"
        )


def check_selected(config, seed_span: int = 1) -> dict[str, SearcherPlan]:
    """Every label, then the plan of each selected searcher (its options and its budget's fields checked,
    ``nas.engine.budget``), or a ConfigError. ``seed_span``: consecutive seeds per searcher (1 = keys split
    from one seed)."""
    if not to_dict(config)["searchers"]:
        raise ConfigError("config.searchers is empty: name at least one searcher")
    for label in searcher_entries(config):
        if not LABEL.match(label):
            raise ConfigError(
                f"config.searchers: label {label!r} must be letters, digits, '_', '.' or '-' (it names files)"
            )
    return {label: searcher_plan(config, label, seed_span) for label in selected_labels(config)}


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


@dataclasses.dataclass(frozen=True)
class SearcherPlan:
    """One selected searcher of a config, checked: its entry, its options built once from the entry and
    the config's budget, and that budget (``nas.engine.budget.Budget``, spelt as the config's fields).

    A multi-fidelity searcher's options leave ``fidelities`` as the entry gives them (empty): the
    benchmark's are filled in by ``build`` once it is loaded.
    """

    label: str
    name: str
    entry: dict  # {"name": ..., **options, constraints}: fingerprints checkpoints, saved with the history
    options: SearcherOptions
    budget: Budget

    @property
    def runs_on_host(self) -> bool:
        """A peer (``nas.experiment.peers``), run by its Python loop rather than compiled."""
        return registry.runs_on_host(self.name)

    @property
    def multi_fidelity(self) -> bool:
        return registry.is_multi_fidelity(self.name)

    def options_on(self, fidelities: tuple[float, ...] | None) -> SearcherOptions:
        """The options with the benchmark's ``fidelities`` (a multi-fidelity searcher; an entry that names
        other budgets is refused), else as built."""
        if fidelities is None or not self.multi_fidelity:
            return self.options
        given = tuple(float(b) for b in self.entry.get("fidelities") or ())
        if given and given != tuple(fidelities):
            raise ConfigError(
                f"config.searchers.{self.label}.fidelities={given} differ from the benchmark's {tuple(fidelities)}; "
                "leave it empty (the benchmark's are filled in)"
            )
        try:  # every other option as built: dataclasses.replace checks the whole set again
            return dataclasses.replace(self.options, fidelities=tuple(fidelities))
        except (TypeError, ValueError) as e:
            raise ConfigError(f"config.searchers.{self.label}: {e}") from e

    def build(self, space, fidelities: tuple[float, ...] | None = None) -> Searcher:
        """The searcher on ``space`` (``fidelities``: the benchmark's budgets), its budget checked against the
        space before it is built and against memory after (a ConfigError naming the config's fields)."""
        try:
            check_space(self.budget, space)  # before the searcher sizes anything by the budget
        except BudgetError as e:
            raise ConfigError(str(e)) from e
        options = self.options_on(fidelities)
        try:
            searcher = registry.build(self.name, space, options)
        except DataError:
            raise  # a data file an option names (TNAS's params_file): "data error: <file>: ..."
        except (TypeError, ValueError) as e:
            raise ConfigError(f"config.searchers.{self.label}: {e}") from e
        try:
            check_memory(self.budget, searcher)  # the memory of its run state
        except BudgetError as e:
            raise ConfigError(str(e)) from e
        return searcher


def searcher_plan(config, label: str, seed_span: int = 1) -> SearcherPlan:
    """Searcher ``label``'s entry checked and its options built (config entry + the config's budget), or a
    ConfigError naming the field."""
    entry = searcher_entries(config)[label]
    sname = entry.get("name")
    names = registry.available()
    if sname not in names:
        raise ConfigError(f"config.searchers.{label}.name: {unknown('searcher', sname, names)}")
    opts = {k: v for k, v in entry.items() if k != "name" and k not in ENTRY_FIELDS}
    try:
        entry_constraints(entry)
    except ValueError as e:
        raise ConfigError(f"config.searchers.{label}.constraints: {e}") from e
    if entry.get("constraint_mode", "penalty") not in ("penalty", "filter"):
        raise ConfigError(f"config.searchers.{label}.constraint_mode must be 'penalty' or 'filter', "
                          f"got {entry['constraint_mode']!r}")  # fmt: skip
    if "max_queries" in opts:
        raise ConfigError(f"config.searchers.{label}: set the budget with config.max_queries, not per searcher")
    cfg = to_dict(config)
    try:
        options = registry.make_entry_options(sname, max_queries=int(cfg["max_queries"]), **opts)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"config.searchers.{label}: {e}") from e
    wanted = 1 + len(config_metrics(cfg))
    if hasattr(options, "num_objectives") and options.num_objectives != wanted:
        raise ConfigError(
            f"config.searchers.{label}.num_objectives={options.num_objectives}, but config.metrics names "
            f"{wanted - 1} metric(s) ({wanted} objectives with the score); set one to match the other"
        )
    budget = Budget(
        max_queries=cfg["max_queries"],
        batch_size=options.batch_size,
        num_trials=cfg["num_trials"],
        seed=cfg["seed"],
        seed_span=seed_span,
        names={
            **{f: f"config.{f}" for f in ("num_trials", "max_queries", "seed")},
            "batch_size": f"config.searchers.{label}.batch_size",
        },
        option_prefix=f"config.searchers.{label}.",
    )
    try:
        check_fields(budget)
    except BudgetError as e:
        raise ConfigError(str(e)) from e
    return SearcherPlan(label, sname, entry, options, budget)


def searcher_options_of(config, label: str, fidelities: tuple[float, ...] | None = None):
    """The options dataclass of searcher ``label`` (config entry + the config's budget), or a ConfigError.

    A multi-fidelity searcher's ``fidelities`` are the benchmark's (given here once it is loaded): an entry
    leaves them empty, and one that names other budgets is refused."""
    return searcher_plan(config, label).options_on(fidelities)


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


def build_searcher(config, label: str, space, fidelities: tuple[float, ...] | None = None) -> Searcher:
    """Searcher ``label`` of ``config`` on ``space`` (a ConfigError when its options or budget do not fit the
    space); ``fidelities``: the benchmark's budgets, for multi-fidelity searchers."""
    return searcher_plan(config, label).build(space, fidelities)


def trial_keys(config) -> jax.Array:
    cfg = to_dict(config)
    return jax.random.split(jax.random.PRNGKey(int(cfg["seed"])), int(cfg["num_trials"]))
