"""The ``tpe`` peer: Optuna's tree-structured Parzen estimator on our spaces, one study per seed.

Optuna's ``TPESampler`` (Bergstra et al., 2011, "Algorithms for Hyper-Parameter Optimization", the TPE
of the ReMAADE paper's Table III and Section VIII) proposes one configuration at a time; the peers'
protocol (``nas.experiment.peers``) runs it beside our searchers. Optuna is optional: ``pip install
optuna`` (requirements-dev.txt).

Tokens map to Optuna distributions one to one: an ordinal token (a numeric grid:
``HPOSpace.ordinal``, or a ``CategoricalSpace`` list of increasing numbers) is
``suggest_int`` over its index (a log grid stays log-spaced), any other token
``suggest_categorical`` over its indices. Conditional spaces (``HPOSpace``) are
suggested top-down, define-by-run: an inactive hyperparameter is never
suggested (token 0).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from nas.core.options import positive
from nas.experiment.peer_base import HostPeerOptions, Peer, register_peer
from spaces.base import Space
from spaces.files import MissingPackageError
from spaces.hpo import HPOSpace


@dataclasses.dataclass(frozen=True)
class TPEOptions(HostPeerOptions):
    """Attributes (and the protocol's, ``HostPeerOptions``):
    n_startup_trials: random trials before the Parzen estimators (Optuna's default 10).
    n_ei_candidates: candidates scored by the expected-improvement ratio (24).
    multivariate: Optuna's multivariate TPE (joint Parzen estimator; conditional spaces use ``group``).
    """

    n_startup_trials: int = 10
    n_ei_candidates: int = 24
    multivariate: bool = False

    def check(self):
        super().check()
        positive(self, "n_ei_candidates")
        if self.n_startup_trials < 0:
            raise ValueError(f"n_startup_trials must be >= 0, got {self.n_startup_trials}")


def import_optuna():
    try:
        import optuna
    except ImportError as e:
        raise MissingPackageError(
            "the 'tpe' peer needs Optuna, an optional dependency: pip install optuna (see requirements-dev.txt)"
        ) from e
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna


def ordinal_tokens(space: Space) -> list[bool]:
    """Which tokens are ordered numeric grids (``space.ordinal``, or increasing numeric value lists)."""
    if hasattr(space, "ordinal"):
        return [bool(o) for o in space.ordinal]
    out = []
    for name in space.token_names:
        vals = getattr(space, "values", {}).get(name)
        numeric = vals is not None and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals)
        out.append(bool(numeric and len(vals) > 1 and np.all(np.diff(np.asarray(vals, float)) > 0)))
    return out


class TPEProposer:
    """One seed's Optuna study; ``ask() -> (trial, tokens)``, ``tell(trial, value | None)``."""

    def __init__(self, space: Space, options: TPEOptions, seed: int):
        optuna = import_optuna()
        self.space, self.ordinal = space, ordinal_tokens(space)
        conditional = isinstance(space, HPOSpace) and any(h.when for h in space.hyperparameters)
        kwargs = {"group": True} if options.multivariate and conditional else {}
        sampler = optuna.samplers.TPESampler(
            seed=seed, n_startup_trials=options.n_startup_trials, n_ei_candidates=options.n_ei_candidates,
            multivariate=options.multivariate, **kwargs,
        )  # fmt: skip
        self.study = optuna.create_study(direction="maximize", sampler=sampler)
        self._trial_state = optuna.trial.TrialState

    def _active(self, tokens: np.ndarray, i: int) -> bool:
        return bool(self.space.active_host(tokens)[i]) if isinstance(self.space, HPOSpace) else True

    def ask(self):
        trial = self.study.ask()
        tokens = np.zeros(self.space.num_tokens, np.int32)
        for i, (name, card) in enumerate(zip(self.space.token_names, self.space.cardinalities)):
            if not self._active(tokens, i):  # top-down: parents (earlier tokens) are decided
                continue
            if self.ordinal[i]:
                tokens[i] = trial.suggest_int(name, 0, card - 1)
            else:
                tokens[i] = trial.suggest_categorical(name, list(range(card)))
        return trial, tokens

    def ask_fixed(self, tokens: np.ndarray):
        """The next trial set to ``tokens`` (its active hyperparameters)."""
        act = [self._active(tokens, i) for i in range(self.space.num_tokens)]
        self.study.enqueue_trial({n: int(t) for n, t, a in zip(self.space.token_names, tokens, act) if a})
        return self.ask()

    def tell(self, trial, value: float | None) -> None:
        if value is None:
            self.study.tell(trial, state=self._trial_state.FAIL)
        else:
            self.study.tell(trial, float(value))


@register_peer("tpe")
class TPEPeer(Peer):
    """Optuna's TPE under the peers' protocol (``nas.experiment.peers``)."""

    Options = TPEOptions
    Proposer = TPEProposer
    installed = staticmethod(import_optuna)
