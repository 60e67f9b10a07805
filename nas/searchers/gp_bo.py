"""GP-BO: Bayesian optimization with an exact GP on architecture encodings (BANANAS' GP baseline).

White, Neiswanger & Savani (2021), BANANAS, Section 5.1: "We set up Bayesian
optimization with a Gaussian process model ... the distance function between two
neural networks [is] the sum of the Hamming distances between the adjacency
matrices and the list of operations." Here: the exact GP of ``surrogates.gp``
with the ``"hamming"`` kernel ``exp(-d_H / l)`` on the ``"adjacency"`` encoding
(adjacency bits + one-hot ops; on NAS-Bench-201 the adjacency is fixed, so this
is the per-edge op one-hot), hyperparameters by marginal likelihood, expected
improvement by default (``"ucb"`` as in the paper's baseline by config), and the
same batch loop and candidates as BANANAS (``nas.searchers.bo``).
"""

from __future__ import annotations

import dataclasses

from nas.core.registry import register
from nas.searchers.bo import BOOptions, BOSearcher


@dataclasses.dataclass(frozen=True)
class GPBOOptions(BOOptions):
    """``BOOptions`` with expected improvement as the default acquisition."""

    acquisition: str = "ei"


@register("gp_bo")
class GPBO(BOSearcher):
    """Exact GP + EI/UCB over mutation (and/or random) candidates."""

    Options = GPBOOptions
    random_steps_light = True  # BOSearcher: its random first steps compile light, the same numbers
    PREFERRED_ENCODINGS = ("adjacency", "ordinal", "onehot")
