"""Any registered searcher as an Optuna sampler: switch an Optuna study to ReMAADE or BANANAS in one line.

::

    import optuna
    from nas.adapters.optuna_sampler import SearcherSampler

    def objective(trial):
        lr = trial.suggest_categorical("lr", [1e-4, 3e-4, 1e-3, 3e-3])
        width = trial.suggest_categorical("width", [64, 128, 256])
        return train_and_validate(lr, width)

    sampler = SearcherSampler("remaade", max_queries=50, seed=0)   # was: optuna.samplers.TPESampler()
    study = optuna.create_study(direction="minimize", sampler=sampler)
    study.optimize(objective, n_trials=50)

The searcher runs through ``nas.host.ask_tell.Study`` (host ask/tell, ``nas/adapters/bridge.py``): each
Optuna trial gets the next configuration of the searcher's batch (Optuna's relative sampling), and
the searcher is told once all trials of its batch are finished.

- **Space.** Categorical parameters only (a searcher's space is a product of value lists,
  ``spaces.base.CategoricalSpace``). Give ``search_space={name: [values]}`` (or Optuna
  ``CategoricalDistribution``s), or let the sampler learn it: the first trial (or the first
  ``n_jobs`` trials that start together) is sampled uniformly at random and is not shown to the
  searcher; the parameters suggested by the first completed trial are the space. Float and int
  distributions have no value list and are refused with a clear error.
- **Budget.** ``max_queries`` is the searcher's budget, startup trials included; it sets the
  searcher's schedules (BANANAS's data buckets, ReMAADE's steps). A trial beyond it raises.
- **Failed and pruned trials.** A failed trial (an exception, a NaN) is a failed evaluation
  (the searcher sees ``-inf``). A pruned trial is told its last reported intermediate value
  (Optuna's own convention) with ``pruned="last_value"`` (default), or counts as failed with
  ``pruned="failed"``; a pruned trial that reported nothing is failed.
- **Batches and threads.** ``batch_size=k`` (a searcher option) lets ``k`` trials run at once
  (``study.optimize(..., n_jobs=k)``); a thread that asks while the batch is out waits for the
  others to finish theirs. In ask-and-tell use, asking more than ``batch_size`` trials before
  telling raises (a single thread would wait for itself).
- **Limits.** Single objective. The searcher's state lives in this sampler object: one process
  (threads are fine); a study shared by several processes through an RDB storage would run one
  independent searcher per process. Enqueued trials (``study.enqueue_trial``) are evaluated but
  not shown to the searcher.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from spaces.files import MissingPackageError

try:
    import optuna
    from optuna.distributions import BaseDistribution, CategoricalDistribution
    from optuna.samplers import BaseSampler
    from optuna.study import StudyDirection
    from optuna.trial import FrozenTrial, TrialState
except ImportError as e:  # optional dependency
    raise MissingPackageError("nas.adapters.optuna_sampler needs Optuna: pip install optuna") from e

from nas.adapters.bridge import BudgetSpent, StudyBridge

_HOW = "use trial.suggest_categorical(name, [values]) or give search_space={name: [values]}"


def _categorical(name: str, dist: Any) -> CategoricalDistribution:
    """``dist`` (a list of values or an Optuna distribution) as a CategoricalDistribution, or a clear error."""
    if isinstance(dist, CategoricalDistribution):
        return dist
    if isinstance(dist, BaseDistribution):
        raise ValueError(
            f"SearcherSampler maps only categorical parameters; {name!r} is {dist} (no list of values): {_HOW}"
        )
    if isinstance(dist, (str, bytes)) or not isinstance(dist, Sequence) or len(dist) == 0:
        raise ValueError(f"search_space[{name!r}] must be a non-empty list of values, got {dist!r}")
    return CategoricalDistribution(list(dist))


class SearcherSampler(BaseSampler):
    """A registered searcher (``nas.core.searcher.make_searcher``) as an Optuna sampler (see the module doc).

    Args:
      searcher: registered searcher name ("regularized_evolution", "remaade", "bananas", ...).
      search_space: ``{name: [values] | CategoricalDistribution}``; None = learned from the first trial.
      max_queries: the searcher's budget of trials.
      seed: the searcher's seed (same seed and values -> same configurations).
      pruned: "last_value" or "failed" (how a pruned trial is told).
      **searcher_options: options of the searcher (``batch_size``, ``population_size``, ...).
    """

    def __init__(
        self,
        searcher: str = "regularized_evolution",
        search_space: dict[str, Any] | None = None,
        *,
        max_queries: int = 100,
        seed: int = 0,
        pruned: str = "last_value",
        **searcher_options,
    ):
        if pruned not in ("last_value", "failed"):
            raise ValueError(f"pruned must be 'last_value' or 'failed', got {pruned!r}")
        if search_space is not None and (not isinstance(search_space, dict) or not search_space):
            raise ValueError("search_space must be a non-empty dict {name: [values]} (or None to learn it)")
        self._space = None if search_space is None else {k: _categorical(k, v) for k, v in search_space.items()}
        self._bridge = StudyBridge(searcher, max_queries, seed, searcher_options)
        self._pruned = pruned
        self._rng = np.random.default_rng(seed)  # startup trials while the space is learned
        self._seen: dict[str, CategoricalDistribution] = {}  # parameters suggested by startup trials
        self._startup: set[int] = set()  # numbers of the startup trials
        self._learned = False
        self._owner: dict[int, int] = {}  # trial number -> thread that asked for it
        self._study_name: str | None = None

    def __repr__(self) -> str:
        return f"SearcherSampler({self._bridge.searcher!r}, max_queries={self._bridge.max_queries})"

    # -- the search space ------------------------------------------------------------------
    def _check_study(self, study: optuna.Study) -> None:
        self._raise_error_if_multi_objective(study)
        if self._study_name is None:
            self._study_name = study.study_name
        elif study.study_name != self._study_name:
            raise RuntimeError(
                f"this SearcherSampler drives study {self._study_name!r}; create a new sampler for "
                f"{study.study_name!r} (the searcher's state belongs to one study)"
            )

    def _start(self, study: optuna.Study) -> None:
        space = self._space if self._space is not None else dict(self._seen)
        budget = self._bridge.max_queries - len(self._startup)
        if budget < 1:
            raise ValueError(
                f"max_queries={self._bridge.max_queries} leaves no trial for the searcher after "
                f"{len(self._startup)} startup trial(s); raise max_queries or give search_space"
            )
        direction = "minimize" if study.direction == StudyDirection.MINIMIZE else "maximize"
        self._bridge.start({k: list(d.choices) for k, d in space.items()}, direction, budget)
        self._space = space

    def infer_relative_search_space(self, study: optuna.Study, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        self._check_study(study)
        with self._bridge.cond:
            if not self._bridge.started:
                if self._space is None and not self._learned:
                    self._startup.add(trial.number)  # still learning the space: a startup trial
                    return {}
                self._start(study)
            return dict(self._space)

    def sample_relative(
        self, study: optuna.Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        if not search_space or trial.system_attrs.get("fixed_params"):
            return {}  # startup or enqueued trial: not the searcher's
        me = threading.get_ident()
        with self._bridge.cond:
            while True:
                try:
                    params = self._bridge.propose(trial.number)
                except BudgetSpent as e:
                    raise RuntimeError(f"SearcherSampler: {e} (run at most max_queries trials)") from None
                if params is not None:
                    self._owner[trial.number] = me
                    return params
                mine = [k for k in self._bridge.pending() if self._owner.get(k) == me]
                if mine:
                    raise RuntimeError(
                        f"SearcherSampler: all {self._bridge.study.batch_size} trials of the searcher's batch are out "
                        f"(trials {mine} not told yet); tell them first, or create the sampler with a larger batch_size"
                    )
                self._bridge.cond.wait()  # another thread finishes a trial of the batch

    def sample_independent(
        self, study: optuna.Study, trial: FrozenTrial, param_name: str, param_distribution: BaseDistribution
    ) -> Any:
        dist = _categorical(param_name, param_distribution)
        with self._bridge.cond:
            if trial.number in self._startup:  # a startup trial (the space is learned from the first one)
                if not self._bridge.started:
                    known = self._seen.setdefault(param_name, dist)
                    if known != dist:
                        raise ValueError(f"parameter {param_name!r} suggested as {dist}, earlier as {known}")
            elif param_name not in self._space:
                raise ValueError(
                    f"parameter {param_name!r} is not in the sampler's search space {list(self._space)}; "
                    "give search_space={name: [values]} with every parameter the objective suggests"
                )
            elif not trial.system_attrs.get("fixed_params"):
                raise ValueError(
                    f"parameter {param_name!r} suggested as {dist}, but the sampler's search space has "
                    f"{self._space[param_name]}; suggest it with the same values"
                )
            return dist.choices[int(self._rng.integers(len(dist.choices)))]

    # -- results ----------------------------------------------------------------------------
    def after_trial(
        self, study: optuna.Study, trial: FrozenTrial, state: TrialState, values: Sequence[float] | None
    ) -> None:
        with self._bridge.cond:
            if trial.number in self._startup and state == TrialState.COMPLETE:
                self._learned = True
            if state == TrialState.COMPLETE:
                value = values[0]
            elif state == TrialState.PRUNED and self._pruned == "last_value" and values:
                value = values[0]
            else:
                value = None  # failed, or pruned before reporting
            self._bridge.record(trial.number, value)
            self._owner.pop(trial.number, None)

    def reseed_rng(self) -> None:
        """Nothing: the searcher's keys come from ``seed`` (Optuna calls this for ``n_jobs > 1``)."""

    @property
    def study(self):
        """The ``nas.host.ask_tell.Study`` behind the sampler (None until the first searcher trial)."""
        return self._bridge.study
