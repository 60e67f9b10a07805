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

The searcher runs through ``nas.host.study.Study`` (host ask/tell, ``nas/adapters/bridge.py``): each
Optuna trial gets the next configuration of the searcher's batch (Optuna's relative sampling), and
the searcher is told once all trials of its batch are finished.

- **Space.** Categorical, float and int parameters: ``suggest_categorical``, ``suggest_float(name,
  low, high, log=..., step=...)``, ``suggest_int(name, low, high, log=..., step=...)``. A float or
  int range is an ordered grid (``spaces.params``: 101 values, or 16 per decade on a log scale, both
  ends included, on the step where there is one; values handed back lie in the distribution). Give
  ``search_space={name: [values] | Optuna distribution | spaces.params.Float / Int / Categorical}``
  (declarations set a grid's ``num`` and conditions ``when=``), or let the sampler learn it: the
  first trial (or the first ``n_jobs`` trials that start together) is sampled uniformly at random
  and is not shown to the searcher; the parameters suggested by the first completed trial are the
  space.
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
    from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution
    from optuna.samplers import BaseSampler
    from optuna.study import StudyDirection
    from optuna.trial import FrozenTrial, TrialState
except ImportError as e:  # optional dependency
    raise MissingPackageError("nas.adapters.optuna_sampler needs Optuna: pip install optuna") from e

from nas.adapters.bridge import BudgetSpent, StudyBridge
from spaces.params import Categorical, Float, Int


def _declaration(name: str, dist: BaseDistribution):
    """An Optuna distribution as a ``spaces.params`` declaration (a one-value range as a one-value list)."""
    if isinstance(dist, CategoricalDistribution):
        return list(dist.choices)
    if not isinstance(dist, (FloatDistribution, IntDistribution)):
        raise ValueError(
            f"SearcherSampler cannot map parameter {name!r}: {dist} is not a float, int or categorical one"
        )
    if dist.single():
        return [dist.low]
    if isinstance(dist, FloatDistribution):
        return Float(dist.low, dist.high, log=dist.log, step=dist.step)
    return Int(dist.low, dist.high, log=dist.log, step=None if dist.step == 1 else dist.step)


def _distribution(name: str, spec: Any) -> BaseDistribution:
    """A ``search_space`` entry (values, an Optuna distribution or a declaration) as the Optuna distribution
    the objective suggests."""
    if isinstance(spec, BaseDistribution):
        _declaration(name, spec)  # unmappable kinds fail here
        return spec
    if isinstance(spec, Categorical):
        return CategoricalDistribution(list(spec.choices))
    if isinstance(spec, (Float, Int)):
        if spec.log and spec.step not in (None, 1):
            raise ValueError(
                f"search_space[{name!r}] = {spec!r}: Optuna has no log range with a step; drop one of them"
            )
        if isinstance(spec, Float):
            return FloatDistribution(spec.low, spec.high, log=spec.log, step=spec.step)
        return IntDistribution(spec.low, spec.high, log=spec.log, step=spec.step or 1)
    if isinstance(spec, (str, bytes)) or not isinstance(spec, Sequence) or len(spec) == 0:
        raise ValueError(f"search_space[{name!r}] must be a non-empty list of values, an Optuna distribution or "
                         f"Float/Int/Categorical, got {spec!r}")  # fmt: skip
    return CategoricalDistribution(list(spec))


def _draw(decl, rng: np.random.Generator):
    """A uniformly drawn value of a declaration (a startup trial's)."""
    values = decl if isinstance(decl, list) else decl.values()
    return values[int(rng.integers(len(values)))]


class SearcherSampler(BaseSampler):
    """A registered searcher (``nas.searchers.make_searcher``) as an Optuna sampler (see the module doc).

    Args:
      searcher: registered searcher name ("regularized_evolution", "remaade", "bananas", ...).
      search_space: ``{name: [values] | Optuna distribution | Float | Int | Categorical}``; None = learned
        from the first trial.
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
            raise ValueError(
                "search_space must be a non-empty dict {name: [values] | Float | Int} (or None to learn it)"
            )
        self._space = None if search_space is None else {k: _distribution(k, v) for k, v in search_space.items()}
        given = search_space or {}  # the declarations the searcher's space is built from (lists as given)
        self._decls = {k: v if isinstance(v, (Float, Int, Categorical)) else _declaration(k, self._space[k])
                       for k, v in given.items()}  # fmt: skip
        self._bridge = StudyBridge(searcher, max_queries, seed, searcher_options)
        self._pruned = pruned
        self._rng = np.random.default_rng(seed)  # startup trials while the space is learned
        self._seen: dict[str, BaseDistribution] = {}  # parameters suggested by startup trials
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
        if self._space is None:
            self._decls = {k: _declaration(k, d) for k, d in space.items()}
        self._bridge.start(dict(self._decls), direction, budget)
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
        dist = param_distribution
        decl = _declaration(param_name, dist)  # unmappable kinds fail here
        with self._bridge.cond:
            if trial.number in self._startup:  # a startup trial (the space is learned from the first one)
                if not self._bridge.started:
                    known = self._seen.setdefault(param_name, dist)
                    if known != dist:
                        raise ValueError(f"parameter {param_name!r} suggested as {dist}, earlier as {known}")
            elif param_name not in self._space:
                raise ValueError(
                    f"parameter {param_name!r} is not in the sampler's search space {list(self._space)}; "
                    "give search_space={name: [values] | Float | Int} with every parameter the objective suggests"
                )
            elif not trial.system_attrs.get("fixed_params"):
                if dist != self._space[param_name]:
                    raise ValueError(
                        f"parameter {param_name!r} suggested as {dist}, but the sampler's search space has "
                        f"{self._space[param_name]}; suggest it with the same values"
                    )
                when = getattr(self._decls.get(param_name), "when", ())
                cond = " and ".join(f"{p} in {list(v)}" for p, v in when) or "its condition"
                raise ValueError(
                    f"parameter {param_name!r} is inactive in trial {trial.number} (the search space has it only "
                    f"when {cond}); suggest it only then"
                )
            return _draw(decl, self._rng)

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
            # a range suggested with other bounds can take the searcher's value when it lies inside them
            other = [
                k for k, d in trial.distributions.items() if self._space and k in self._space and d != self._space[k]
            ]
            if other and self._bridge.started and trial.number in self._bridge.trials:
                value = None
            self._bridge.record(trial.number, value)
            self._owner.pop(trial.number, None)
            if other and trial.number in self._bridge.trials:
                k = other[0]
                raise ValueError(
                    f"parameter {k!r} suggested as {trial.distributions[k]}, but the sampler's search space has "
                    f"{self._space[k]}; suggest it with the same values (trial {trial.number} is recorded as failed)"
                )

    def reseed_rng(self) -> None:
        """Nothing: the searcher's keys come from ``seed`` (Optuna calls this for ``n_jobs > 1``)."""

    @property
    def study(self):
        """The ``nas.host.study.Study`` behind the sampler (None until the first searcher trial)."""
        return self._bridge.study
