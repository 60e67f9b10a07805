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
built or compiled (the fields: ``nas.experiment.config_fields``; each selected
searcher's entry: ``nas.experiment.searcher_plan``) and returns each selected
searcher's ``SearcherPlan`` (its options built once, its budget); errors are
``ConfigError`` with one line naming the field and the fix. ``nas.experiment.plan``
makes the whole run plan from it.
"""

from __future__ import annotations

import dataclasses

import jax
import ml_collections

from nas.core.contract import Searcher
from nas.experiment import registry
from nas.experiment.config_fields import (  # noqa: F401  (the config's names, read from here by configs and users)
    BENCH_OPTIONS,
    LABEL,
    REQUIRED,
    RUN_FIELDS,
    ConfigError,
    benchmark_kwargs,
    build_benchmark,
    check_config_fields,
    check_int,
    get,
    searcher_entries,
    selected_labels,
    to_dict,
    with_data_files,
)
from nas.experiment.multiobjective import ENTRY_FIELDS
from nas.experiment.searcher_plan import SearcherPlan, check_selected, searcher_plan
from spaces.names import unknown


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


def validate_config(config) -> dict[str, SearcherPlan]:
    """Fails with a clear message on anything that would fail later (before any compile); returns the
    selected searchers' plans (``check_selected``).

    Only the selected searchers (``config.only``) are checked: another searcher's option never stops a run.
    """
    check_config_fields(to_dict(config))
    return check_selected(config)


def searcher_options_of(config, label: str, fidelities: tuple[float, ...] | None = None):
    """The options dataclass of searcher ``label`` (config entry + the config's budget), or a ConfigError.

    A multi-fidelity searcher's ``fidelities`` are the benchmark's (given here once it is loaded): an entry
    leaves them empty, and one that names other budgets is refused."""
    return searcher_plan(config, label).options_on(fidelities)


def build_searcher(config, label: str, space, fidelities: tuple[float, ...] | None = None) -> Searcher:
    """Searcher ``label`` of ``config`` on ``space`` (a ConfigError when its options or budget do not fit the
    space); ``fidelities``: the benchmark's budgets, for multi-fidelity searchers."""
    return searcher_plan(config, label).build(space, fidelities)


def trial_keys(config) -> jax.Array:
    cfg = to_dict(config)
    return jax.random.split(jax.random.PRNGKey(int(cfg["seed"])), int(cfg["num_trials"]))
