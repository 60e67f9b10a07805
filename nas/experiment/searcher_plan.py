"""One searcher entry of a config checked: its options built once, its budget, the searcher it builds.

``check_selected(config)`` checks every label and returns the ``SearcherPlan`` of each selected searcher
(``config.only``): the entry, its options (``nas.experiment.registry.make_entry_options``: a compiled
searcher or a peer, with the config's ``max_queries``) and its ``nas.engine.budget.Budget``, whose
own fields are checked here. ``SearcherPlan.build(space, fidelities)`` checks the budget against the
space, fills in a multi-fidelity searcher's fidelities, builds the searcher and checks its memory.
Every refusal is one ``ConfigError`` line naming the config field.
"""

from __future__ import annotations

import dataclasses

from nas.core.contract import Searcher
from nas.core.options import SearcherOptions
from nas.engine.budget import Budget, BudgetError, check_fields, check_memory, check_space
from nas.experiment import registry
from nas.experiment.config_fields import LABEL, ConfigError, searcher_entries, selected_labels, to_dict
from nas.experiment.multiobjective import ENTRY_FIELDS, config_metrics, entry_constraints
from spaces.files import DataError
from spaces.names import unknown


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
