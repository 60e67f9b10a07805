"""Cheap options per registered searcher for the contract tests (small networks, few epochs), and which
searchers are slow to compile (their runs are marked ``slow``: ``pytest -m "not slow"`` leaves
them out; CI runs them)."""

import pytest

# searchers whose runs are slow to compile: those that fit or train models inside ask/tell (MLP ensembles,
# GPs, deep kernels, policies, simulators, NASBOT's OTMANN GP, AlphaX's meta-DNN, BOHB's KDEs), and
# warm_start, which compiles its inner searcher with the design's replacement draws
SLOW_SEARCHERS = (
    "alphax", "bananas", "bohb", "gp_bo", "mf_bananas", "nasbot", "parego_bananas", "reacts", "remaade", "tnas",
    "warm_start",
)  # fmt: skip

CHEAP = {
    "regularized_evolution": {"population_size": 10, "tournament_size": 4},
    "local_search": {"num_init": 5},
    "remaade": {"batch_size": 5, "max_queries": 20, "d": 8, "ppo_epochs": 2},
    "reacts": {"batch_size": 5, "max_queries": 15, "d": 8, "ppo_epochs": 2, "rollouts": 2, "sim_epochs": 3},
    "bananas": {"max_queries": 30, "epochs": 3, "num_members": 2, "num_layers": 2, "num_candidates": 20},
    "parego_bananas": {"max_queries": 30, "epochs": 3, "num_members": 2, "num_layers": 2, "num_candidates": 20},
    "nsga2": {"population_size": 6},
    "mo_regularized_evolution": {"population_size": 10, "tournament_size": 4},
    "parego_local_search": {"num_init": 5},
    "gp_bo": {"max_queries": 30, "gp_steps": 5, "num_candidates": 20},
    "tnas": {"max_queries": 12, "num_init": 4, "batch_size": 2, "finetune_steps": 2},
    "smbo_linear": {"num_candidates": 64},
    "mf_bananas": {"epochs": 3, "num_members": 2, "num_layers": 2, "num_candidates": 20, "num_init": 4},
    # local search from 4 NB201 cells (batches of 3: the design fills one batch and a part of the next)
    "warm_start": {
        "searcher": "local_search",
        "searcher_options": '{"num_init": 5}',
        "batch_size": 3,
        "design": "3,3,4,1,3,1;0,1,2,3,4,0;4,4,4,4,4,4;1,1,1,1,1,1",
        "num_design": 4,
    },
    "nasbot": {"max_queries": 30, "gp_steps": 5, "num_candidates": 20, "mutations_per_generation": 10},
    "alphax": {"num_rollouts": 2, "num_layers": 1, "width": 16, "train_steps": 1, "min_train": 3},
}


def cheap_options(name: str) -> dict:
    """Options that make searcher ``name`` fast to compile and run in tests ({} for the cheap ones)."""
    return dict(CHEAP.get(name, {}))


def slow_marks(name: str) -> list:
    """``[pytest.mark.slow]`` for a searcher of ``SLOW_SEARCHERS``, else no marks."""
    return [pytest.mark.slow] if name in SLOW_SEARCHERS else []


def searcher_params(names) -> list:
    """``names`` for ``pytest.mark.parametrize``, the ``SLOW_SEARCHERS`` marked ``slow``."""
    return [pytest.param(n, marks=slow_marks(n)) for n in names]
