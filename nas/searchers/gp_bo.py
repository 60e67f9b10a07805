"""GP-BO: Bayesian optimization with an exact GP on architecture encodings (BANANAS' GP baseline).

BANANAS (seed paper 001), section 5.1: "We set up Bayesian optimization with a Gaussian process
model ... the distance function between two neural networks [is] the sum of the Hamming distances
between the adjacency matrices and the list of operations." Here: the exact GP of
``surrogates.gp`` with the ``"hamming"`` kernel ``exp(-d_H / l)`` on the ``"adjacency"`` encoding
(adjacency bits + one-hot ops; on NAS-Bench-201 the adjacency is fixed, so this is the per-edge
op one-hot), hyperparameters by marginal likelihood, expected improvement by default (``"ucb"``
as in the paper's baseline by config), and the same batch loop and candidates as BANANAS (``t0 =
k = 10``, mutation candidates of up to 2 edits, top ``k`` per step; ``nas.searchers.bananas.BOSearcher``).
"""

from __future__ import annotations

from nas.searcher import register
from nas.searchers.bananas import BOSearcher


@register("gp_bo")
class GPBO(BOSearcher):
    """Exact GP + EI/UCB over mutation (and/or random) candidates."""

    PREFERRED_ENCODINGS = ("adjacency", "onehot")
    TEST_KWARGS = {"max_queries": 30, "gp_steps": 5, "num_candidates": 20}

    def __init__(
        self,
        space,
        batch_size: int = 10,
        max_queries: int = 150,
        num_init: int = 10,
        encoding: str = "auto",
        acquisition: str = "ei",
        beta: float = 0.5,
        acq_opt: str = "mutation",
        num_candidates: int = 100,
        patience: int = 5,
        max_edits: int = 2,
        num_random: int = 100,
        kernel: str = "hamming",
        gp_steps: int = 100,
        gp_learning_rate: float = 0.05,
        dedup_encoding: bool = True,
        bucket_multiple: int = 64,
        bucket: int = -1,
    ):
        super().__init__(
            space,
            batch_size=batch_size,
            max_queries=max_queries,
            num_init=num_init,
            encoding=encoding,
            predictor="gp",
            acquisition=acquisition,
            beta=beta,
            acq_opt=acq_opt,
            num_candidates=num_candidates,
            patience=patience,
            max_edits=max_edits,
            num_random=num_random,
            kernel=kernel,
            gp_steps=gp_steps,
            gp_learning_rate=gp_learning_rate,
            dedup_encoding=dedup_encoding,
            bucket_multiple=bucket_multiple,
            bucket=bucket,
        )
