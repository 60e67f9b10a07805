"""Budgets that cannot be met are refused up front, in one line, at every entry point (``nas.engine.budget``),
and ``config.only`` validates only what runs."""

import pytest

from configs import default, language_search, nb201_tnas
from nas.engine import budget as budget_module
from nas.engine.budget import Budget, BudgetError, check_budget, run_state_bytes
from nas.experiment.config import ConfigError, validate_config
from nas.experiment.run import run_experiment
from nas.experiment.task_experiment import run_task_experiment, validate_task_config
from nas.host.study import Study
from spaces import hpo, nb101, nb201


def train_config(**over):
    config = default.get_config()
    config.num_trials, config.max_queries, config.report_every, config.only = 2, 6, 3, "random_search"
    config.searchers.random_search.batch_size = over.pop("batch_size", 1)
    for k, v in over.items():
        setattr(config, k, v)
    return config


def train(tmp_path, **over):
    run_experiment(train_config(**over), str(tmp_path / "wd"), progress=False)


def study(tmp_path, **over):
    Study({"a": [1, 2, 3], "b": [1, 2]}, searcher="random_search", **{"max_queries": 4, **over})


def language(tmp_path, **over):
    config = language_search.get_config("genetic_digits")
    config.num_trials, config.max_queries, config.only = 2, 4, "random"
    config.searchers.random.batch_size = over.pop("batch_size", 2)
    for k, v in over.items():
        setattr(config, k, v)
    validate_task_config(config)
    run_task_experiment(config, str(tmp_path / "wd"))


def meta_train(tmp_path, **over):
    from nas.experiment.tnas_settings import settings
    from scripts.meta_train import check_meta_budget

    config = nb201_tnas.get_config("cifar10")
    config.meta.update(over)
    _, _, rep, model, meta = settings(config)
    space = nb101.NB101Space() if "num_strings" in over else nb201.SPACE  # NB101: sampled strings
    check_meta_budget(space, model, rep, meta, 2)


BAD = [  # entry point, field, value, what the one line says
    (
        train,
        "num_trials",
        3_000_000_000,
        r"needs at least [\d.]+ TiB of memory \(3,000,000,000 trials x \d+ B .*"
        r"lower config.num_trials \(or config.max_queries\)",
    ),
    (train, "max_queries", 15_626, r"config.max_queries=15626 exceeds the 15,625 distinct configurations of nb201"),
    (train, "max_queries", 10**30, r"config.max_queries must be in \[1, 2\*\*31 - 1\]"),
    (train, "seed", 2**64, r"config.seed=18446744073709551616 must lie in \[0, 2\*\*32\)"),
    (train, "seed", -1, r"config.seed must be an integer >= 0"),
    (train, "batch_size", 7, r"config.searchers.random_search.batch_size=7 must be in \[1, config.max_queries=6\]"),
    (study, "max_queries", 7, r"^max_queries=7 exceeds the 6 distinct configurations of study"),
    (study, "batch_size", 5, r"^batch_size=5 must be in \[1, max_queries=4\]"),
    (study, "seed", 2**32, r"^seed=4294967296 must lie in \[0, 2\*\*32\)"),
    (language, "max_queries", 513, r"config.max_queries=513 exceeds the 512 distinct configurations"),
    (language, "seed", 2**32 - 1, r"config.seed=4294967295 \(with 2 consecutive seeds from it\) must lie in"),
    (language, "batch_size", 5, r"config.searchers.random.batch_size=5 must be in \[1, config.max_queries=4\]"),
    (meta_train, "seed", 2**40, r"config.meta.seed=1099511627776 must lie in \[0, 2\*\*32\)"),
    (meta_train, "num_strings", 500_000, r"config.meta.num_strings=500000 exceeds the 423,624 distinct"),
    (meta_train, "batch_size", 20_000, r"config.meta.batch_size=20000 must be in \[1, the space's strings=15625\]"),
]


@pytest.mark.parametrize("entry, field, value, message", BAD, ids=[f"{e.__name__}-{f}-{v}" for e, f, v, _ in BAD])
def test_every_budget_field_is_refused_up_front_at_every_entry_point(tmp_path, entry, field, value, message):
    with pytest.raises((ConfigError, BudgetError), match=message) as e:
        entry(tmp_path, **{field: value})
    assert "\n" not in str(e.value)
    assert not (tmp_path / "wd").exists()  # nothing written, nothing trained


def test_memory_estimate_is_the_run_state_and_names_what_to_lower(monkeypatch):
    from nas.searchers import make_searcher

    searcher = make_searcher("random_search", nb201.SPACE, max_queries=150)
    per_trial = run_state_bytes(searcher)
    history = budget_module.history_bytes(6, 150)
    assert history == 150 * (4 * 6 + 12) and history < per_trial < 64 * history  # buffers + seen set
    monkeypatch.setattr(budget_module, "available_memory", lambda: 1000 * (per_trial + history))
    check_budget(Budget(150, num_trials=500), nb201.SPACE, searcher)  # fits
    with pytest.raises(BudgetError, match=r"2,000 trials x .* more than the .* available; lower num_trials"):
        check_budget(Budget(150, num_trials=2000), nb201.SPACE, searcher)


def test_spaces_count_their_distinct_configurations():
    space = hpo.HPOSpace(
        "toy",
        [
            hpo.categorical("solver", ["sgd", "adam"]),
            hpo.grid("momentum", [0.0, 0.9, 0.99], when={"solver": ["sgd"]}),
            hpo.grid("beta", [0.5, 0.9], when={"solver": ["adam"]}),
            hpo.floating("lr", 1e-3, 1e-1, 3, log=True),
        ],
    )
    assert space.size == 36 and space.num_configurations == (3 + 2) * 3  # inactive tokens are one configuration
    assert nb201.SPACE.num_configurations == 15625 and nb101.SPACE.num_configurations == 423_624


def test_only_validates_the_searchers_that_run():
    config = nb201_tnas.get_config("cifar10")
    config.max_queries = 10
    with pytest.raises(ConfigError, match="num_init"):  # BANANAS (or TNAS) cannot spend 10 queries
        validate_config(config)
    config.only = "random_search"
    validate_config(config)  # the other searchers' options do not stop it
    host = language_search.get_config("genetic_digits")
    host.searchers.mcts.exploration = -1.0
    with pytest.raises(ConfigError, match="exploration"):
        validate_task_config(host)
    host.only = "random"
    validate_task_config(host)
