"""A multi-fidelity searcher (ASHA, Hyperband, BOHB, successive halving, mf-BANANAS) as an Optuna sampler and
its pruner: the searcher decides which configuration runs, to which budget, and which one is promoted.

::

    import optuna
    from nas.adapters.optuna_multi_fidelity import MultiFidelitySampler

    def objective(trial):
        lr = trial.suggest_float("lr", 1e-4, 1e-1, log=True)  # suggest first: the trial then has its budget
        state, start = load(trial.user_attrs["parent_checkpoint_dir"])  # a promotion continues its parent
        for epoch in range(start + 1, 28):
            loss = train_one_epoch(state, lr)
            save(trial.user_attrs["checkpoint_dir"], state, epoch)
            trial.report(loss, epoch)
            if trial.should_prune():   # True once the trial reached the budget the searcher gave it
                raise optuna.TrialPruned()
        return loss

    sampler = MultiFidelitySampler("hyperband", {"lr": optuna.distributions.FloatDistribution(1e-4, 1e-1, log=True)},
                                   fidelities=[1, 3, 9, 27], max_queries=20, seed=0, directory="ckpt")
    study = optuna.create_study(sampler=sampler, pruner=sampler.pruner)
    study.optimize(objective)  # ends by itself once the searcher's budget is spent (study.stop())

**How a promotion maps onto Optuna's trials.** Optuna has no "continue trial k": a trial runs once. Each
Optuna trial is therefore one *evaluation* of the searcher: a configuration trained to a budget. The
sampler asks the searcher (``nas.host.study.Study``) when the trial starts and hands it
the configuration (``sample_relative``) and, in ``trial.user_attrs``, ``budget`` (the fidelity's value),
``fidelity`` (its index), ``parent`` (for a promotion: the number of the Optuna trial whose training it
continues, else None), ``checkpoint_dir`` and ``parent_checkpoint_dir`` (folders under ``directory``,
named ``trial_<Optuna number>``; None without a directory). The objective is written as for any
Optuna pruner: train towards the top budget, report each step, stop when ``should_prune()`` says
so. The paired pruner (``sampler.pruner``) says so once the trial reported a step at or past its
budget; the value reported at the first such step is the evaluation's result, told to the searcher.
So evaluations below the top budget end ``PRUNED`` and only top-budget ones ``COMPLETE``: Optuna's
``study.best_trial`` is the searcher's incumbent (the best evaluation at the top fidelity). A
promotion resumes its parent's checkpoint (``continues=True``, the default, charges it the budget
difference; ``continues=False`` when the training restarts from scratch).

The alternative, ASHA's pruning form (every trial trains to the top unless stopped at a rung), fits
Optuna without any of this (``nas.adapters.optuna_pruner.ASHAPruner``), but it is another
algorithm: only this mapping lets Hyperband, BOHB, successive halving and mf-BANANAS, and ASHA with
promotions, decide as they do in the compiled engine (given the same results in the same order the
sampler proposes exactly what ``Study(..., searcher=...)`` proposes; tested).

- **Budget and end.** ``max_queries`` full trainings' worth of the fidelity unit (as the Study). When the
  last evaluation is handed out the sampler calls ``study.stop()``, so ``study.optimize(objective)``
  needs no ``n_trials``. With ``n_jobs > 1`` a thread may start a trial after that; it gets no
  configuration and is pruned at its first ``suggest_*`` (no parameters, no value).
- **Threads.** ``workers=W`` sizes the searcher as the engine with W workers; give ``n_jobs=W``. A
  synchronous searcher that waits for a rung's last results makes a starting trial wait (in its
  thread) until another finishes.
- **Space.** Given up front (``search_space``: lists, Optuna distributions or ``spaces.params``
  declarations, as ``SearcherSampler``); the objective suggests each parameter with the same
  distribution. Enqueued trials (``study.enqueue_trial``) run but are not the searcher's.
- ``sampler.study`` is the multi-fidelity Study (its ``trials`` carry budgets, parents, values).
"""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np

try:
    import optuna
    from optuna.distributions import BaseDistribution
    from optuna.pruners import BasePruner
    from optuna.samplers import BaseSampler
    from optuna.study import StudyDirection
    from optuna.trial import FrozenTrial, TrialState
except ImportError as e:  # optional dependency
    raise ImportError("nas.adapters.optuna_multi_fidelity needs Optuna: pip install optuna") from e

from nas.adapters.optuna_sampler import _declaration, _distribution, _draw
from nas.host.job_driver import check_multi_fidelity
from nas.host.study import Study
from nas.host.study_budget import study_arguments
from nas.host.trials import BudgetSpent, NoTrialNow, Trial, checkpoint_key
from spaces.params import Categorical, Float, Int

ATTRS = ("budget", "fidelity", "parent", "checkpoint_dir", "parent_checkpoint_dir")


class MultiFidelitySampler(BaseSampler):
    """A multi-fidelity searcher as an Optuna sampler; ``self.pruner`` stops each trial at its budget (module doc).

    Args:
      searcher: "asha", "hyperband", "bohb", "successive_halving" or "mf_bananas".
      search_space: ``{name: [values] | Optuna distribution | Float | Int | Categorical}``.
      fidelities: the budgets (steps, epochs) the searcher trains to, increasing; the training reports them.
      max_queries: the budget, in full trainings (``max_queries * fidelities[-1]`` steps in all).
      seed: the searcher's seed.
      workers: W, the trials running at once (``n_jobs``); the searcher's state is sized for them.
      continues: a promotion resumes its parent's checkpoint (charged the budget difference).
      directory: where each trial's checkpoint folder ``trial_<number>`` is made (None: no folders).
      **searcher_options: the searcher's options (``eta``, ``num_brackets``, ...).
    """

    def __init__(self, searcher: str, search_space: dict[str, Any], *, fidelities, max_queries: int = 20,
                 seed: int = 0, workers: int = 1, continues: bool = True, directory: str | None = None,
                 **searcher_options):  # fmt: skip
        if not isinstance(search_space, dict) or not search_space:
            raise ValueError("search_space must be a non-empty dict {name: [values] | distribution | Float | Int}: "
                             "a multi-fidelity searcher needs its space before the first trial")  # fmt: skip
        self._space = {k: _distribution(k, v) for k, v in search_space.items()}
        decls = {k: v if isinstance(v, (Float, Int, Categorical)) else _declaration(k, self._space[k])
                 for k, v in search_space.items()}  # fmt: skip
        self._args = dict(space=decls, searcher=searcher, seed=int(seed), max_queries=max_queries,
                          fidelities=tuple(fidelities), workers=int(workers), continues=bool(continues),
                          **searcher_options)  # fmt: skip
        check_multi_fidelity(searcher)
        Study(direction="minimize", **study_arguments(self._args))  # names, options, space checked now, not in a trial
        self.directory = None if directory is None else os.fspath(directory)
        self._study: Study | None = None
        self._cond = threading.Condition(threading.RLock())
        self._jobs: dict[int, Trial] = {}  # Optuna trial number -> the searcher's trial it runs
        self._optuna_number: dict[int, int] = {}  # the searcher's trial number -> Optuna's
        self._owner: dict[int, int] = {}  # Optuna trial number -> the thread that started it
        self._spent: set[int] = set()  # trials started after the budget was spent
        self._rng = np.random.default_rng(seed)  # enqueued trials' other parameters
        self._study_name: str | None = None
        self.pruner = BudgetPruner(self)

    def __repr__(self) -> str:
        return f"MultiFidelitySampler({self._args['searcher']!r}, fidelities={list(self._args['fidelities'])})"

    @property
    def study(self):
        """The ``nas.host.study.Study`` behind the sampler (None before the first trial)."""
        return self._study

    def job(self, number: int) -> Trial | None:
        """The searcher's trial that Optuna trial ``number`` runs (None: not the searcher's)."""
        return self._jobs.get(number)

    # -- a trial starts: the searcher chooses its configuration, budget and parent ----------------------------
    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        if trial.system_attrs.get("fixed_params"):
            return  # enqueued: not the searcher's
        with self._cond:
            self._check(study)
            me = threading.get_ident()
            while True:
                try:
                    job = self._study.ask()
                    break
                except BudgetSpent:
                    self._spent.add(trial.number)
                    _stop(study)
                    return
                except NoTrialNow:
                    mine = [n for n, t in self._jobs.items() if t.state == "pending" and self._owner.get(n) == me]
                    if mine or not self._study.pending():
                        raise RuntimeError(f"MultiFidelitySampler: {self._args['searcher']} waits for the results of "
                                           f"trials {mine} (a synchronous rung); tell them before asking for another "
                                           "trial") from None  # fmt: skip
                    self._cond.wait()  # another thread's trial finishes
            self._jobs[trial.number], self._optuna_number[job.number] = job, trial.number
            self._owner[trial.number] = me
            attrs = self._attrs(job, trial.number)
            for k, v in attrs.items():
                study._storage.set_trial_user_attr(trial._trial_id, k, v)
            trial.user_attrs.update(attrs)  # Optuna's Trial reads its cached FrozenTrial: this one
            if np.float32(self._study.spent) >= np.float32(self._study.searcher.max_resource):
                _stop(study)  # the last evaluation is out: no new trial after the running ones

    def _check(self, study: optuna.Study) -> None:
        if len(study.directions) > 1:
            raise ValueError("MultiFidelitySampler: single-objective studies only")
        if self._study_name is None:
            self._study_name = study.study_name
            direction = "maximize" if study.direction == StudyDirection.MAXIMIZE else "minimize"
            self._study = Study(direction=direction, **study_arguments(self._args))
        elif study.study_name != self._study_name:
            raise RuntimeError(f"this MultiFidelitySampler drives study {self._study_name!r}; create a new sampler "
                               f"for {study.study_name!r} (the searcher's state belongs to one study)")  # fmt: skip

    def _attrs(self, job: Trial, number: int) -> dict:
        parent = None if job.parent is None else self._optuna_number[job.parent]
        folders = {"checkpoint_dir": None, "parent_checkpoint_dir": None}
        if self.directory is not None:
            folders["checkpoint_dir"] = os.path.join(self.directory, checkpoint_key(number))
            os.makedirs(folders["checkpoint_dir"], exist_ok=True)
            if parent is not None:
                folders["parent_checkpoint_dir"] = os.path.join(self.directory, checkpoint_key(parent))
        return {"budget": float(job.budget), "fidelity": int(job.fidelity), "parent": parent, **folders}

    # -- the configuration --------------------------------------------------------------------------------
    def infer_relative_search_space(self, study: optuna.Study, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        return dict(self._space) if trial.number in self._jobs or trial.number in self._spent else {}

    def sample_relative(self, study: optuna.Study, trial: FrozenTrial,
                        search_space: dict[str, BaseDistribution]) -> dict[str, Any]:  # fmt: skip
        if trial.number in self._spent:
            raise optuna.TrialPruned(f"the searcher's budget of {self._args['max_queries']} full trainings is spent")
        job = self._jobs.get(trial.number)
        return {} if job is None else dict(job.params)

    def sample_independent(self, study: optuna.Study, trial: FrozenTrial, param_name: str,
                           param_distribution: BaseDistribution) -> Any:  # fmt: skip
        if trial.number in self._spent:
            raise optuna.TrialPruned(f"the searcher's budget of {self._args['max_queries']} full trainings is spent")
        if trial.number in self._jobs:
            if param_name not in self._space:
                raise ValueError(f"parameter {param_name!r} is not in the sampler's search space {list(self._space)}; "
                                 "give search_space with every parameter the objective suggests")  # fmt: skip
            if param_distribution != self._space[param_name]:
                raise ValueError(
                    f"parameter {param_name!r} suggested as {param_distribution}, but the sampler's "
                    f"search space has {self._space[param_name]}; suggest it with the same values"
                )
            raise ValueError(f"parameter {param_name!r} is inactive in trial {trial.number} (its condition in the "
                             "search space does not hold); suggest it only when it is active")  # fmt: skip
        return _draw(_declaration(param_name, param_distribution), self._rng)

    # -- a trial ends: its value at the budget goes to the searcher ------------------------------------------
    def after_trial(self, study: optuna.Study, trial: FrozenTrial, state: TrialState, values) -> None:
        with self._cond:
            job = self._jobs.get(trial.number)
            if job is None or job.state != "pending":
                return
            for step, v in sorted(trial.intermediate_values.items()):
                self._study.report(job, step, v)
            value = None
            if state == TrialState.COMPLETE:
                value = values[0]
            elif state == TrialState.PRUNED:
                reached = [s for s in trial.intermediate_values if s >= job.budget]
                value = trial.intermediate_values[min(reached)] if reached else None
            self._study.tell(job, value)
            self._cond.notify_all()

    def reseed_rng(self) -> None:
        """Nothing: the searcher's keys come from ``seed`` (Optuna calls this for ``n_jobs > 1``)."""


class BudgetPruner(BasePruner):
    """Stops a trial of a ``MultiFidelitySampler`` once it reported a step at or past the budget its searcher
    gave it (never at the top fidelity); trials that are not the searcher's are never pruned."""

    def __init__(self, sampler: MultiFidelitySampler):
        self._sampler = sampler

    def prune(self, study: optuna.Study, trial: FrozenTrial) -> bool:
        if trial.number in self._sampler._spent:
            return True
        job = self._sampler.job(trial.number)
        if job is None or job.fidelity == len(self._sampler._args["fidelities"]) - 1:
            return False
        return bool(trial.intermediate_values) and max(trial.intermediate_values) >= job.budget


def _stop(study: optuna.Study) -> None:
    """``study.stop()`` inside ``optimize``; nothing in ask-and-tell use (Optuna refuses it there)."""
    try:
        study.stop()
    except RuntimeError:
        pass
