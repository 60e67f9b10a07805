"""Built-in searchers; importing this package registers them all."""

from nas.searchers import (  # noqa: F401
    bananas,
    gp_bo,
    local_search,
    mcts,
    random_search,
    reacts,
    regularized_evolution,
    remaade,
    smbo_linear,
    tnas,
    warm_start,
)
