"""Built-in searchers; importing this package registers them all."""

from nas.searchers import (  # noqa: F401
    alphax,
    asha,
    bananas,
    bohb,
    gp_bo,
    local_search,
    mcts,
    mf_bananas,
    nasbot,
    random_search,
    reacts,
    regularized_evolution,
    remaade,
    smbo_linear,
    successive_halving,
    tnas,
    warm_start,
)
