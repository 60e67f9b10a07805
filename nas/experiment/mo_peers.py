"""Multi-objective peers: Optuna's NSGA-II and multi-objective TPE, and Syne Tune's MO-REA, on our objectives.

They run under the protocol of the ``tpe`` peer (``nas.experiment.peers``: per-seed sequential, seeds in
lockstep, one jitted query per step for the group, never re-query with the same fallback), told the
vector ``[valid, +-metric, ...]`` of the run's metrics, every component maximized
(``spaces.benchmarks.metrics.objective_vector``; a failed evaluation is a failed trial).

- ``optuna_mo`` (``sampler="nsga2"``): ``optuna.samplers.NSGAIISampler`` (Deb et al. 2002) with
  ``population_size`` (20, as our ``nsga2``), ``UniformCrossover(swap_prob)`` applied with probability
  ``crossover_prob`` (Optuna's defaults 0.5 and 0.9) and Optuna's default mutation (each parameter
  resampled with probability 1/N). A repeated proposal is told as a failed trial, which Optuna's NSGA-II
  leaves out of its generations.
- ``optuna_mo`` (``sampler="tpe"``): ``optuna.samplers.TPESampler`` on a study with several directions,
  Optuna's multi-objective TPE (MOTPE; Ozaki et al., 2020), ``n_startup_trials`` 10.
- ``syne_tune_morea``: Syne Tune's ``MultiObjectiveRegularizedEvolution`` (Salinas et al., 2021; its
  non-dominated sort with an epsilon-net within fronts), ``population_size`` 30 and ``sample_size`` 10 as
  our ``mo_regularized_evolution``. It is driven through its searcher interface, ``suggest`` and
  ``on_trial_complete``, the calls Syne Tune's FIFO scheduler makes; Syne Tune's simulator, which this
  library uses for ASHA (``nas.experiment.syne_tune_peer``), would add only a simulated clock to a
  sequential run of full evaluations, so it is not used. Syne Tune samples with replacement: a repeated
  suggestion is dropped (not told) and another one asked, up to ``max_repeats``, then the fallback.
  Syne Tune minimizes: it is told ``-vector`` (a failed evaluation: 1e30 in every objective). Its random
  configurations come from NumPy's global generator: each seed's proposer keeps a generator of its own
  (seeded like the searcher) and swaps it in around ``suggest``, so seeds run in lockstep stay independent
  and a run is reproducible.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from nas.core.multi_objective import MultiObjectiveOptions
from nas.core.options import one_of, positive
from nas.experiment.peer_base import HostPeerOptions, Peer, register_peer
from nas.experiment.syne_tune_peer import import_syne_tune
from nas.experiment.tpe_peer import TPEOptions, TPEProposer, import_optuna, ordinal_tokens

FAILED = 1e30  # what Syne Tune's MO-REA is told for a failed evaluation (it sorts costs; inf breaks its distances)


@dataclasses.dataclass(frozen=True)
class OptunaMOOptions(MultiObjectiveOptions, TPEOptions):
    """Attributes (and the ``tpe`` peer's: n_startup_trials, n_ei_candidates, max_repeats, fallback, repeats,
    seeds_per_group; and ``num_objectives``):
    sampler: ``nsga2`` (``NSGAIISampler``) or ``tpe`` (multi-objective ``TPESampler``).
    population_size: NSGA-II's population (20).
    crossover_prob, swap_prob: NSGA-II's crossover probability and uniform crossover's swapping probability.
    """

    sampler: str = "nsga2"
    population_size: int = 20
    crossover_prob: float = 0.9
    swap_prob: float = 0.5

    def check(self):
        super().check()
        one_of(self, "sampler", ("nsga2", "tpe"))
        positive(self, "population_size")
        for name in ("crossover_prob", "swap_prob"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must lie in [0, 1], got {getattr(self, name)}")


class OptunaMOProposer(TPEProposer):
    """One seed's Optuna study with ``num_objectives`` directions, all ``maximize``."""

    def __init__(self, space, options: OptunaMOOptions, seed: int):
        optuna = import_optuna()
        self.space, self.ordinal = space, ordinal_tokens(space)
        if options.sampler == "nsga2":
            sampler = optuna.samplers.NSGAIISampler(
                population_size=options.population_size, crossover_prob=options.crossover_prob,
                crossover=optuna.samplers.nsgaii.UniformCrossover(options.swap_prob), seed=seed,
            )  # fmt: skip
        else:
            sampler = optuna.samplers.TPESampler(
                seed=seed, n_startup_trials=options.n_startup_trials, n_ei_candidates=options.n_ei_candidates
            )
        self.study = optuna.create_study(directions=["maximize"] * options.num_objectives, sampler=sampler)
        self._trial_state = optuna.trial.TrialState

    def tell(self, trial, value) -> None:
        """``value``: the maximized vector (a list), or None for a failed trial."""
        if value is None:
            self.study.tell(trial, state=self._trial_state.FAIL)
        else:
            self.study.tell(trial, [float(v) for v in value])


@dataclasses.dataclass(frozen=True)
class MOREAOptions(MultiObjectiveOptions, HostPeerOptions):
    """Attributes (and ``num_objectives`` and the peer protocol's, ``nas.experiment.peers.HostPeerOptions``;
    ``repeats="requery"``: Syne Tune as it is, a repeated suggestion queried and told again):
    population_size, sample_size: Syne Tune's MO-REA population and tournament (30 and 10, as ours).
    """

    population_size: int = 30
    sample_size: int = 10

    def check(self):
        super().check()
        positive(self, "population_size", "sample_size")


class MOREAProposer:
    """One seed's Syne Tune ``MultiObjectiveRegularizedEvolution``: ``ask() -> (config, tokens)``, ``tell``."""

    def __init__(self, space, options: MOREAOptions, seed: int):
        import_syne_tune()
        from syne_tune.config_space import choice
        from syne_tune.optimizer.schedulers.multiobjective import MultiObjectiveRegularizedEvolution

        self.space = space
        self.names = [f"t{i}" for i in range(space.num_tokens)]
        config_space = {n: choice(list(range(c))) for n, c in zip(self.names, space.cardinalities)}
        self.searcher = MultiObjectiveRegularizedEvolution(
            config_space, population_size=options.population_size, sample_size=options.sample_size,
            random_seed=seed,
        )  # fmt: skip
        self.trials, self.num_objectives = 0, options.num_objectives
        self.global_state = np.random.RandomState(seed).get_state()  # this seed's draws of NumPy's global generator

    def ask(self):
        outside = np.random.get_state()
        np.random.set_state(self.global_state)
        try:
            config = self.searcher.suggest()
        finally:
            self.global_state = np.random.get_state()
            np.random.set_state(outside)
        return config, np.asarray([config[n] for n in self.names], np.int32)

    def ask_fixed(self, tokens: np.ndarray):
        config = {n: int(t) for n, t in zip(self.names, tokens)}
        return config, np.asarray(tokens, np.int32)

    def reject(self, config) -> None:
        """A repeated or invalid suggestion: dropped (MO-REA has no failed trials), another one is asked."""

    def tell(self, config, value) -> None:
        costs = [FAILED] * self.num_objectives if value is None else [-float(v) for v in value]
        self.searcher.on_trial_complete(str(self.trials), config, costs)
        self.trials += 1


@register_peer("optuna_mo")
class OptunaMOPeer(Peer):
    """Optuna's NSGA-II or multi-objective TPE under the peers' protocol."""

    Options = OptunaMOOptions
    Proposer = OptunaMOProposer
    installed = staticmethod(import_optuna)


@register_peer("syne_tune_morea")
class MOREAPeer(Peer):
    """Syne Tune's multi-objective regularized evolution under the peers' protocol."""

    Options = MOREAOptions
    Proposer = MOREAProposer
    installed = staticmethod(import_syne_tune)

    @classmethod
    def repeats_reason(cls, options: dict) -> str:
        if options.get("repeats") == "requery":
            return "Syne Tune's MO-REA samples with replacement and re-queries its repeats"
        return ""
