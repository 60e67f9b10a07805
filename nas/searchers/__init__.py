"""Built-in searchers; importing this package registers them all."""

from nas.searchers import (  # noqa: F401
    alphax,
    bananas,
    gp_bo,
    local_search,
    mcts,
    nasbot,
    random_search,
    reacts,
    regularized_evolution,
    remaade,
    smbo_linear,
    tnas,
)
