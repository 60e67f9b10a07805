"""The built-in searchers and the full registry: importing this package registers them all.

Read the registry from here (``from nas.searchers import make_searcher, available_searchers``): the
functions are ``nas.core.registry``'s, re-exported after every built-in searcher module has registered
its class. A searcher module imports ``nas.core.registry`` (never this package), so there is no cycle.
"""

from nas.core.registry import (
    SEARCHERS,
    available_searchers,
    check_option_names,
    make_options,
    make_searcher,
    register,
    searcher_class,
    searcher_options,
)
from nas.searchers import (  # noqa: F401  (each module registers its searchers on import)
    alphax,
    asha,
    bananas,
    bohb,
    gp_bo,
    local_search,
    mcts,
    mf_bananas,
    mo_asha,
    mo_evolution,
    nasbot,
    nsga2,
    random_search,
    reacts,
    regularized_evolution,
    remaade,
    scalarized,
    smbo_linear,
    successive_halving,
    tnas,
    warm_start,
)

__all__ = [
    "SEARCHERS",
    "available_searchers",
    "check_option_names",
    "make_options",
    "make_searcher",
    "register",
    "searcher_class",
    "searcher_options",
]
