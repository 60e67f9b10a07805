"""ASHA's stopping rule and Hyperband's brackets as Optuna pruners, for any Optuna sampler.

::

    import optuna
    from nas.adapters.optuna_pruner import ASHAPruner

    def objective(trial):
        lr = trial.suggest_float("lr", 1e-4, 1e-1, log=True)
        for epoch in range(1, 28):
            loss = train_one_epoch(lr)
            trial.report(loss, epoch)            # Optuna's order: value, step
            if trial.should_prune():
                raise optuna.TrialPruned()
        return loss

    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=0),
                                pruner=ASHAPruner(range(1, 28), eta=3))  # was: SuccessiveHalvingPruner()
    study.optimize(objective, n_trials=50)

The deciders are those of the host Study (``nas.host.pruning``): ``ASHAPruner(fidelities, eta=3,
min_budget=0, max_budget=0, early_stopping_rate=0)`` puts its rungs on the ``asha`` searcher's ladder
over ``fidelities`` (the steps the training may report at; ``range(1, 28)`` gives rungs 1, 3, 9) and
stops a trial that is not in the top ``1/eta`` of the values recorded at a rung so far;
``HyperbandPruner(fidelities, eta=3)`` gives each trial one of Hyperband's brackets (in turn, by trial
number, each bracket as many trials as it starts configurations in the paper's schedule) and decides
within it. Never at the top budget.

- **What is fed.** ``trial.should_prune()`` feeds the pruner the values the trial reported since its
  last call, in step order, each deciding at the rungs it passes (as ``Study.report`` does), so the
  decisions do not depend on how often the objective asks. A stopped trial stays stopped.
- **Other trials.** Before deciding, the pruner also takes in the reports of the study's other
  trials that it has not seen (``study.get_trials``): threads (``n_jobs``) and processes that share
  an RDB or journal storage compete at the same rungs. Each process keeps its own rungs, filled in
  the order it sees the reports.
- **Values.** The study's direction sets the sign (the deciders compare scores, higher is better); a
  NaN or infinite value stops the trial.
- **Decisions equal the host Study's.** Given the same reports in the same order, the pruner stops
  exactly the trials ``Study(..., pruner="asha")`` stops (tested).
"""

from __future__ import annotations

import math
import threading

try:
    import optuna
    from optuna.pruners import BasePruner
    from optuna.study import StudyDirection
    from optuna.trial import FrozenTrial
except ImportError as e:  # optional dependency
    raise ImportError("nas.adapters.optuna_pruner needs Optuna: pip install optuna") from e

from nas.host import pruning


class _RungPruner(BasePruner):
    """An Optuna pruner around a ``nas.host.pruning.Pruner`` (module docstring)."""

    core: type[pruning.Pruner] = pruning.Pruner

    def __init__(self, fidelities, eta: float = 3.0, min_budget: float = 0.0, max_budget: float = 0.0, **options):
        self._core = self.core(tuple(fidelities), eta, min_budget, max_budget, **options)
        self._lock = threading.Lock()
        self._fed: dict[int, float] = {}  # trial number -> the last step fed to the decider
        self._stopped: set[int] = set()
        self._study_name: str | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self._core.fidelities)}, eta={self._core.eta:g})"

    @property
    def rungs(self) -> list[float]:
        """The budgets (steps) at which trials are decided (Hyperband: those of any bracket)."""
        return [self._core.fidelities[f] for f in self._core.ladder[:-1]]

    def prune(self, study: optuna.Study, trial: FrozenTrial) -> bool:
        if len(study.directions) > 1:
            raise ValueError(f"{type(self).__name__} prunes single-objective studies only")
        with self._lock:
            if self._study_name is None:
                self._study_name = study.study_name
            elif study.study_name != self._study_name:
                raise RuntimeError(f"this {type(self).__name__} decides for study {self._study_name!r}; create a new "
                                   f"pruner for {study.study_name!r} (its rungs belong to one study)")  # fmt: skip
            sign = 1.0 if study.direction == StudyDirection.MAXIMIZE else -1.0
            for other in study.get_trials(deepcopy=False):
                if other.number != trial.number:
                    self._feed(other, sign)
            self._feed(trial, sign)
            return trial.number in self._stopped

    def _feed(self, trial: FrozenTrial, sign: float) -> None:
        """Records ``trial``'s reports after the last one fed, in step order, until the decider stops it."""
        last = self._fed.get(trial.number, -math.inf)
        steps = sorted(s for s in trial.intermediate_values if s > last)
        for step in steps:
            if trial.number in self._stopped:
                break
            value = float(trial.intermediate_values[step])
            score = sign * value if math.isfinite(value) else -math.inf
            if self._core.report(trial.number, step, score):
                self._stopped.add(trial.number)
        if steps:
            self._fed[trial.number] = steps[-1]


class ASHAPruner(_RungPruner):
    """ASHA's stopping rule (``nas.host.pruning.ASHAPruner``) as an Optuna pruner (module docstring).

    Args:
      fidelities: the steps the training may report at (e.g. ``range(1, 28)`` or ``[1, 3, 9, 27]``); the
        rungs are the ``asha`` searcher's ladder on them, below the top.
      eta: the reduction factor (Optuna's ``reduction_factor``).
      min_budget, max_budget: the ladder's lowest and highest budget (0: the lowest and the top fidelity).
      early_stopping_rate: skips the lowest rungs, as Optuna's ``min_early_stopping_rate``.
    """

    core = pruning.ASHAPruner


class HyperbandPruner(_RungPruner):
    """Hyperband's brackets (``nas.host.pruning.HyperbandPruner``) as an Optuna pruner (module docstring);
    arguments as ``ASHAPruner``'s."""

    core = pruning.HyperbandPruner

    def bracket(self, number: int) -> int:
        """The bracket of trial ``number`` (0 = the one with the most rungs)."""
        return self._core.group(number)
