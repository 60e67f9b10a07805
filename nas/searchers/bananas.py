"""BANANAS: Bayesian optimization with a neural-network ensemble and path encodings.

White, Neiswanger & Savani (2021), "BANANAS: Bayesian Optimization with Neural
Architectures for Neural Architecture Search", Algorithm 1 (the loop is
``nas.searchers.bo``): the predictor is an ensemble of MLPs on the path
encoding (``surrogates.mlp_ensemble``: 5 members, 10 ReLU layers of width 20,
Adam 0.01, 150 epochs, mean absolute error), or, for the paper's ablation, the
exact GP (``predictor="gp"``). The paper's experiments: ``t0 = k = 10``, 150
queries.

Defaults follow the authors' released code (naszilla ``bananas``), which differs
from the paper's text in two places: independent Thompson sampling
(``acquisition="its"``, the final paper's choice; UCB by config) and mutations
with several edits (``max_edits=2``; the code flips each NAS-Bench-201 edge with
probability 1/4). ``configs/bananas_comparison.py`` runs both variants.
"""

from __future__ import annotations

import dataclasses

from nas.core.searcher import one_of, positive, register
from nas.searchers.bo import BOOptions, BOSearcher
from surrogates.mlp_ensemble import MLPEnsembleConfig, ensemble_mean_std, fit_ensemble, predict_ensemble

PREDICTORS = ("ensemble", "gp")


@dataclasses.dataclass(frozen=True)
class EnsembleOptions:
    """BANANAS' meta neural network, an MLP ensemble (shared by the multi-fidelity BANANAS):
    num_members, num_layers, width, learning_rate, epochs, mlp_batch_size, loss
      (5, 10, 20, 0.01, 150, 32, ``mae``)."""

    num_members: int = 5
    num_layers: int = 10
    width: int = 20
    learning_rate: float = 0.01
    epochs: int = 150
    mlp_batch_size: int = 32
    loss: str = "mae"

    def check_ensemble(self):
        one_of(self, "loss", ("mae", "mse"))
        positive(self, "num_members", "num_layers", "width", "epochs", "mlp_batch_size")


@dataclasses.dataclass(frozen=True)
class BananasOptions(EnsembleOptions, BOOptions):
    """Attributes (and those of ``BOOptions`` and ``EnsembleOptions``):
    predictor: ``ensemble`` (the paper's meta neural network) or ``gp`` (its GP ablation).
    """

    predictor: str = "ensemble"

    def check(self):
        super().check()
        one_of(self, "predictor", PREDICTORS)
        self.check_ensemble()


@register("bananas")
class Bananas(BOSearcher):
    """MLP ensemble (or GP), path encoding, ITS (UCB by config), mutation candidates."""

    Options = BananasOptions

    def setup(self):
        super().setup()
        self.mlp = ensemble_config(self.options)

    @property
    def predictor(self) -> str:
        return self.options.predictor

    def predict(self, key, x, y, mask, x_cand):
        if self.predictor == "gp":
            return super().predict(key, x, y, mask, x_cand)
        params = fit_ensemble(key, x, y, mask, self.mlp)
        members = predict_ensemble(params, x_cand, self.mlp)
        mean, std = ensemble_mean_std(members)
        return mean, std, members


def ensemble_config(o) -> MLPEnsembleConfig:
    """The MLP ensemble of options with BANANAS' fields (``num_members``, ..., ``mlp_batch_size``, ``loss``)."""
    return MLPEnsembleConfig(
        num_members=o.num_members,
        num_layers=o.num_layers,
        width=o.width,
        learning_rate=o.learning_rate,
        epochs=o.epochs,
        batch_size=o.mlp_batch_size,
        loss=o.loss,
    )
