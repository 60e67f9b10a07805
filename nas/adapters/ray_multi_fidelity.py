"""A multi-fidelity searcher (ASHA, Hyperband, BOHB, successive halving, mf-BANANAS) in a Ray Tune ``Tuner``: a
``Searcher`` that proposes its configurations and a ``TrialScheduler`` that stops, pauses and promotes trials,
both driven by one ``nas.host.study.Study``.

::

    from ray import tune
    from nas.adapters.ray_multi_fidelity import MultiFidelitySearch

    def train(config):                      # a plain Tune function trainable that checkpoints
        state, start = init(config), 0
        if tune.get_checkpoint():           # a resumed (promoted) trial continues here
            state, start = load(tune.get_checkpoint())
        for epoch in range(start + 1, 28):
            loss = train_one_epoch(state, config["lr"])
            tune.report({"loss": loss, "epoch": epoch}, checkpoint=save(state, epoch))

    search = MultiFidelitySearch("hyperband", fidelities=[1, 3, 9, 27], time_attr="epoch", max_queries=20,
                                 workers=4)
    tuner = tune.Tuner(train, param_space={"lr": tune.loguniform(1e-4, 1e-1)},
                       tune_config=tune.TuneConfig(search_alg=search, scheduler=search.scheduler,
                                                   metric="loss", mode="min", num_samples=-1))
    tuner.fit()                             # ends once the searcher's budget is spent

**How the searcher's decisions map onto Tune's trials** (Tune's own ``HyperBandForBOHB`` works the
same way): a new configuration is a new Tune trial; the scheduler lets it run until its reported
``time_attr`` reaches the budget the searcher gave it, tells the searcher the metric reported there
and *pauses* the trial (Tune saves the checkpoint reported with that result). A promotion unpauses
the trial that holds the configuration's training: Tune restores its checkpoint
(``tune.get_checkpoint()``) and it trains on to the higher budget; when the searcher promotes the
trial that just reached its budget, it simply continues. A trial at the top budget stops; once the
budget is spent and nothing runs, the paused trials that were not promoted are stopped. The
trainable needs no knowledge of budgets: it trains towards the top, reporting ``time_attr`` and a
checkpoint with each result. The decisions are the compiled searcher's (``nas.host.mf_schedule``):
given the results in the same order, the study proposes and promotes what the engine does with W
workers.

- **Workers.** ``workers=W``: at most W evaluations are out at once (the searcher's state is sized for
  them); let the cluster run W trials at once (``ray.init(num_cpus=W)``, or resources per trial).
  Leave ``max_concurrent_trials`` unset: it would count paused trials as running.
- **Space.** As ``SearcherSearch`` (``nas.adapters.ray_tune``): Tune domains in ``param_space`` or
  ``space=``; constants pass through.
- **Budget.** ``max_queries`` full trainings' worth of ``time_attr`` (as the Study); ``num_samples=-1``
  lets the searcher end the run. ``continues=False`` charges promotions the full budget (a
  trainable that does not checkpoint restarts from scratch).
- **Failures.** A trial that errors, or whose result at its budget lacks the metric or holds NaN, is a
  failed evaluation (``-inf``); a promotion whose trial cannot resume is failed too.
- ``search.study`` is the multi-fidelity Study (budgets, parents, values of every evaluation).
"""

from __future__ import annotations

import math
import pickle
import threading
import warnings
from typing import Any

import numpy as np

try:
    from ray.tune.experiment import Trial as TuneTrial
    from ray.tune.schedulers import TrialScheduler
    from ray.tune.search import Searcher
    from ray.tune.search.variant_generator import parse_spec_vars
    from ray.tune.utils.util import unflatten_dict
except ImportError as e:  # optional dependency
    raise ImportError('nas.adapters.ray_multi_fidelity needs Ray Tune: pip install "ray[tune]"') from e

from nas.adapters.ray_tune import _GRID, declared_params
from nas.host.job_driver import check_multi_fidelity
from nas.host.study import Study
from nas.host.study_budget import study_arguments
from nas.host.trials import BudgetSpent, NoTrialNow, Trial
from spaces.base import Space
from spaces.data_files import read_pickle
from spaces.files import DataError, write_bytes_atomic


class MultiFidelitySearch(Searcher):
    """A multi-fidelity searcher as a Tune ``Searcher``; give ``self.scheduler`` to ``TuneConfig`` (module doc).

    Args:
      searcher: "asha", "hyperband", "bohb", "successive_halving" or "mf_bananas".
      space: ``{name: [values] | Tune domain | Float | Int | Categorical}``, a library space (``spaces.base.Space``:
        the trainable gets its ``to_spec`` dict), or None: the Tuner's ``param_space``.
      fidelities: the budgets in ``time_attr`` units, increasing (e.g. epochs ``[1, 3, 9, 27]``).
      metric, mode: the metric and "min" or "max" (or from ``tune.TuneConfig``).
      max_queries: the budget, in full trainings.
      seed: the searcher's seed.
      workers: W, the evaluations out at once.
      time_attr: the result key that counts training progress (Tune's ``training_iteration`` by default).
      continues: a promotion resumes its trial's checkpoint (charged the budget difference).
      **searcher_options: the searcher's options (``eta``, ...).
    """

    def __init__(self, searcher: str, space: dict[str, Any] | None = None, *, fidelities, metric: str | None = None,
                 mode: str | None = None, max_queries: int = 20, seed: int = 0, workers: int = 1,
                 time_attr: str = "training_iteration", continues: bool = True, **searcher_options):  # fmt: skip
        if mode not in (None, "min", "max"):
            raise ValueError(f"mode must be 'min' or 'max', got {mode!r}")
        super().__init__(metric=metric, mode=mode)
        if space is None or isinstance(space, Space):
            self._space = space  # a library space (``spaces.base.Space``) is searched as it is
        else:
            self._space = declared_params(space, lists=True)
        self._args = dict(searcher=searcher, seed=int(seed), max_queries=max_queries, fidelities=tuple(fidelities),
                          workers=int(workers), continues=bool(continues), **searcher_options)  # fmt: skip
        check_multi_fidelity(searcher)
        Study({"x": [0, 1]}, **study_arguments(self._args))  # the searcher's name and options checked now
        self.time_attr = time_attr
        self.study: Study | None = None
        self.lock = threading.RLock()
        self.job_of: dict[str, Trial] = {}  # Tune trial id -> the evaluation it runs now (pending)
        self.trial_of: dict[int, str] = {}  # the study's trial number -> the Tune trial that ran it
        self.new: list[Trial] = []  # new configurations asked, waiting for suggest
        self.finished = False  # the study's budget is spent: no further evaluation
        self.log: list[tuple] = []  # ("ask",), ("report", number, step, value), ("tell", number, value)
        self.scheduler = MultiFidelityScheduler(self)

    # -- pickles (Tune pickles its searcher and scheduler, and saves the searcher with its experiment) -------
    def __getstate__(self) -> dict:
        with self.lock:
            state = {k: v for k, v in self.__dict__.items() if k not in ("lock", "study", "job_of", "trial_of", "new")}
            state["job_of"] = {k: t.number for k, t in self.job_of.items()}
            state["trial_of"], state["new"] = dict(self.trial_of), [t.number for t in self.new]
            state["started"] = self.study is not None
            return state

    def __setstate__(self, state: dict) -> None:
        """Replays the log through a new Study with the same seed: the searcher's state is rebuilt exactly."""
        started, job_of, new = state.pop("started"), state.pop("job_of"), state.pop("new")
        self.__dict__.update(state)
        self.lock, self.study = threading.RLock(), None
        if started:
            self.study = Study(self._space, direction="minimize" if self._mode == "min" else "maximize",
                               **study_arguments(self._args))
            for event in self.log:
                if event[0] == "ask":
                    try:
                        self.study.ask()
                    except (NoTrialNow, BudgetSpent):
                        pass
                elif event[0] == "report":
                    self.study.report(*event[1:])
                else:
                    self.study.tell(*event[1:])
        self.job_of = {k: self.study.trials[n] for k, n in job_of.items()}
        self.new = [self.study.trials[n] for n in new]

    def save(self, checkpoint_path: str) -> None:
        write_bytes_atomic(checkpoint_path, pickle.dumps(self))

    def restore(self, checkpoint_path: str) -> None:
        saved = read_pickle(checkpoint_path, "restore the experiment from another Tune checkpoint")
        if not isinstance(saved, MultiFidelitySearch):
            raise DataError(f"{checkpoint_path}: not a MultiFidelitySearch checkpoint (a {type(saved).__name__})")
        scheduler = self.scheduler
        self.__dict__.update(saved.__dict__)
        self.scheduler = scheduler  # the scheduler Tune holds keeps deciding from this searcher
        scheduler.search = self

    def set_search_properties(self, metric: str | None, mode: str | None, config: dict, **spec) -> bool:
        if self.study is not None:
            return False
        if config and self._space is None:
            if parse_spec_vars(config)[2]:
                raise ValueError(f"MultiFidelitySearch cannot use tune.grid_search: {_GRID}")
            self._space = declared_params(config)
        self._metric = metric or self._metric
        self._mode = mode or self._mode
        return True

    def start(self) -> None:
        if self.study is not None:
            return
        if self._space is None:
            raise ValueError("MultiFidelitySearch has no search space: give space=... or param_space to tune.Tuner")
        if not self._metric or self._mode not in ("min", "max"):
            raise ValueError("MultiFidelitySearch needs metric and mode ('min' or 'max'): give them to it or to "
                             "tune.TuneConfig")  # fmt: skip
        if not self.scheduler.attached:
            raise ValueError("MultiFidelitySearch decides stops and promotions through its scheduler: give "
                             "tune.TuneConfig(search_alg=search, scheduler=search.scheduler)")  # fmt: skip
        self.study = Study(self._space, direction="minimize" if self._mode == "min" else "maximize",
                           **study_arguments(self._args))

    def fill(self) -> None:
        """Asks the study while fewer than ``workers`` evaluations are out: new configurations wait for ``suggest``,
        a promotion is given to the Tune trial that holds its configuration's training."""
        with self.lock:
            self.start()
            while not self.finished and len(self.study.pending()) < self.study.workers:
                self.log.append(("ask",))  # refused asks too: they may change the searcher's state
                try:
                    job = self.study.ask()
                except NoTrialNow:
                    return
                except BudgetSpent:
                    self.finished = True
                    return
                if job.parent is None:
                    self.new.append(job)
                else:
                    self.assign(self.trial_of[job.parent], job)

    def assign(self, trial_id: str, job: Trial) -> None:
        self.job_of[trial_id], self.trial_of[job.number] = job, trial_id

    def suggest(self, trial_id: str) -> dict | str | None:
        with self.lock:
            self.fill()
            if self.new:
                job = self.new.pop(0)
                self.assign(trial_id, job)
                return unflatten_dict(dict(job.params), delimiter="/")
            return Searcher.FINISHED if self.finished else None

    def tell(self, trial_id: str, value) -> None:
        """Tells the evaluation that Tune trial ``trial_id`` runs (None: failed) and asks for the next ones."""
        with self.lock:
            job = self.job_of.pop(trial_id, None)
            if job is not None and job.state == "pending":
                if value is not None and not (isinstance(value, (int, float, np.number)) and math.isfinite(value)):
                    value = None
                self.study.tell(job, value)
                self.log.append(("tell", job.number, value))
            self.fill()

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False) -> None:
        """Nothing: the scheduler tells the study (it sees every result, pause and error)."""


class MultiFidelityScheduler(TrialScheduler):
    """Stops, pauses and unpauses Tune trials as the ``MultiFidelitySearch``'s study decides (module doc)."""

    def __init__(self, search: MultiFidelitySearch):
        super().__init__()
        self.search = search
        self.attached = False

    def set_search_properties(self, metric: str | None, mode: str | None, **spec) -> bool:
        self.attached = True
        s = self.search  # Tune skips the searcher's set_search_properties when param_space is empty
        s._metric, s._mode = s._metric or metric, s._mode or mode
        self._metric, self._mode = s._metric, s._mode
        return True

    def on_trial_add(self, tune_controller, trial: TuneTrial) -> None:
        pass

    def on_trial_result(self, tune_controller, trial: TuneTrial, result: dict) -> str:
        s = self.search
        with s.lock:
            job = s.job_of.get(trial.trial_id)
            if job is None:
                return TrialScheduler.STOP  # its evaluation was told (failed) or never given: nothing to run
            step, value = result.get(s.time_attr), result.get(s.metric)
            if step is None:
                raise ValueError(
                    f"trial {trial.trial_id} reported no {s.time_attr!r}: report it with every result "
                    "(MultiFidelitySearch(time_attr=...) names the key that counts training progress)"
                )
            if isinstance(value, (int, float, np.number)):
                s.study.report(job, float(step), float(value))
                s.log.append(("report", job.number, float(step), float(value)))
            if float(step) < job.budget:
                return TrialScheduler.CONTINUE
            if value is None:
                warnings.warn(f"trial {trial.trial_id}: no {s.metric!r} in its result at {s.time_attr}={step}; "
                              "recorded as a failed evaluation", stacklevel=2)  # fmt: skip
            s.tell(trial.trial_id, value)
            if trial.trial_id in s.job_of:  # the searcher promoted this very trial: it trains on
                return TrialScheduler.CONTINUE
            if job.fidelity == len(s.study.fidelities) - 1 or s.finished:
                self._stop_paused(tune_controller)
                return TrialScheduler.STOP
            return TrialScheduler.PAUSE  # a promotion may resume it later

    def on_trial_complete(self, tune_controller, trial: TuneTrial, result: dict) -> None:
        s = self.search
        with s.lock:
            if trial.trial_id in s.job_of:  # it ended before its budget: its last result is the evaluation's
                s.tell(trial.trial_id, (result or {}).get(s.metric))
            self._stop_paused(tune_controller)

    def on_trial_error(self, tune_controller, trial: TuneTrial) -> None:
        self.search.tell(trial.trial_id, None)

    def on_trial_remove(self, tune_controller, trial: TuneTrial) -> None:
        self.search.tell(trial.trial_id, None)

    def choose_trial_to_run(self, tune_controller) -> TuneTrial | None:
        s = self.search
        with s.lock:
            s.fill()
            trials = tune_controller.get_trials()
            for trial in trials:  # a promotion: the paused trial holding its configuration's training resumes
                if trial.status == TuneTrial.PAUSED and trial.trial_id in s.job_of:
                    return trial
            for trial in trials:
                if trial.status == TuneTrial.PENDING:
                    return trial
            for trial in trials:  # a promotion whose trial stopped or failed cannot resume: failed
                if trial.trial_id in s.job_of and trial.status in (TuneTrial.TERMINATED, TuneTrial.ERROR):
                    warnings.warn(f"trial {trial.trial_id} ended before its promotion could resume it; the promotion "
                                  "is recorded as a failed evaluation", stacklevel=2)  # fmt: skip
                    s.tell(trial.trial_id, None)
            self._stop_paused(tune_controller)
            return None

    def _stop_paused(self, tune_controller) -> None:
        """Once the budget is spent and nothing is out, the paused trials will never resume: stop them."""
        s = self.search
        if not (s.finished and not s.study.pending() and not s.job_of):
            return
        for trial in tune_controller.get_trials():
            if trial.status == TuneTrial.PAUSED:
                tune_controller.stop_trial(trial)

    def debug_string(self) -> str:
        s = self.search
        if s.study is None:
            return f"MultiFidelityScheduler ({s._args['searcher']}): not started"
        return (f"MultiFidelityScheduler ({s._args['searcher']}): {len(s.study.trials)} evaluations, "
                f"{s.study.spent:g} of {s.study.searcher.max_resource:g} {s.time_attr} spent")  # fmt: skip
