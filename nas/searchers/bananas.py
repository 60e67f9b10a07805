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

Compilation: the ensemble's fit runs only the mini-batches that hold real rows, in an order that does
not depend on the padding, so it needs no program per padded data bucket (``nas.searchers.bo``): every
model step runs one program on all ``capacity`` rows (the GP keeps its buckets). Only the targets'
mean and std are float sums whose rounding depends on the array's length; they are summed over the
first ``P`` rows, ``P`` the step's bucket, so the numbers equal those of a program per bucket, bit for bit.
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp

from nas.core.options import one_of, positive
from nas.core.registry import register
from nas.searchers.bo import BOOptions, BOSearcher
from surrogates.mlp_ensemble import (
    MLPEnsembleConfig,
    clean_targets,
    ensemble_mean_std,
    fit_ensemble,
    predict_ensemble,
    target_stats,
)

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
    random_steps_light = True  # BOSearcher: its random first steps compile light, the same numbers

    def setup(self):
        super().setup()
        self.mlp = ensemble_config(self.options)

    @property
    def predictor(self) -> str:
        return self.options.predictor

    def bucket_for_step(self, t: int) -> int:
        """Every model step of the ensemble fits on all ``capacity`` rows (one program; module docstring)."""
        rows = super().bucket_for_step(t)
        return self.capacity if rows and self.predictor == "ensemble" else rows

    def padded_sizes(self) -> tuple[int, ...]:
        """The padded data sizes of the model steps (``BOSearcher``'s buckets), ascending."""
        return tuple(sorted({BOSearcher.bucket_for_step(self, t) for t in range(self.num_steps)} - {0}))

    def bucket_target_stats(self, y, mask, count):
        """The targets' (mean, scale) summed over the first ``P`` rows, ``P`` the padded bucket of ``count``
        data rows: the smallest padded size >= ``count``, since each bucket is the smallest multiple of
        ``bucket_multiple`` (or the capacity) that holds its data."""
        y, mask = clean_targets(y, mask)
        sizes = self.padded_sizes()
        mean, scale = target_stats(y[: sizes[-1]], mask[: sizes[-1]])
        for p in reversed(sizes[:-1]):
            m_p, s_p = target_stats(y[:p], mask[:p])
            mean, scale = jnp.where(count <= p, m_p, mean), jnp.where(count <= p, s_p, scale)
        return mean, scale

    def predict(self, key, x, y, mask, x_cand, count=None):
        if self.predictor == "gp":
            return super().predict(key, x, y, mask, x_cand, count)
        stats = None if self.variant is None or count is None else self.bucket_target_stats(y, mask, count)
        params = fit_ensemble(key, x, y, mask, self.mlp, y_stats=stats)
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
