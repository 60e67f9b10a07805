"""A multi-fidelity Study: successive halving, Hyperband, BOHB, ASHA and mf-BANANAS for live trainings.

``Study(space, searcher="asha", fidelities=[1, 3, 9, 27], ...)`` (``nas.host.ask_tell.Study`` builds this
class for a multi-fidelity searcher) hands out trials that say how far to train: ``trial.budget``
(``fidelities[trial.fidelity]``) and, for a promotion, the trial whose training it continues
(``trial.parent``, its ``parent_checkpoint_dir``)::

    trial = study.ask()               # NoTrialNow: the searcher waits for a running trial's result
    value = train(trial.params, to=trial.budget, resume_from=trial.parent_checkpoint_dir,
                  save_to=trial.checkpoint_dir)
    study.tell(trial, value)          # None, NaN or inf: a failed evaluation (the searcher sees -inf)

Results may be told in any order while other trials run. The decisions are the compiled searcher's
own, through the engine's schedule (``nas.host.mf_schedule``): given the results in the order they
arrive, the study proposes and promotes exactly what ``nas.engine.multi_fidelity_runner`` does with the
same seed and W workers (tested by replaying an engine run's arrival order).

The budget is compute, as in the engine: ``max_queries`` full evaluations; with ``continues=True`` (the
default: a promotion resumes its parent's checkpoint) a promotion is charged the difference of the
budgets. ``ask`` raises ``BudgetSpent`` once the budget is spent. The incumbent (``best_trial``) is the
best trial completed at the top fidelity (ties: the earlier result), as the engine's reports.
"""

from __future__ import annotations

import jax
import numpy as np

from nas.core.searcher import available_searchers, make_options, make_searcher, searcher_class
from nas.engine.budget import Budget, check_budget
from nas.host.mf_schedule import MFSchedule
from nas.host.programs import program_space
from nas.host.study_base import StudyBase
from nas.host.study_space import make_space
from nas.host.trials import BudgetSpent, NoTrialNow, Trial, as_value, is_nonfinite, now
from nas.host.workers import make_backend, run_trials


class MultiFidelityStudy(StudyBase):
    """Ask/tell over a multi-fidelity searcher for trainings you run (module docstring)."""

    kind = "multi_fidelity"

    def __init__(self, space, searcher: str = "asha", direction: str = "minimize", seed: int = 0,
                 max_queries: int = 100, *, fidelities=None, workers: int = 1, continues: bool = True,
                 storage=None, directory=None, **searcher_kwargs):  # fmt: skip
        if direction not in ("minimize", "maximize"):
            raise ValueError(f"direction must be 'minimize' or 'maximize', got {direction!r}")
        if not getattr(searcher_class(searcher), "multi_fidelity", False):
            raise ValueError(f"{searcher!r} is not a multi-fidelity searcher; choose one of "
                             f"{available_searchers(multi_fidelity=True)}")  # fmt: skip
        if not fidelities:
            raise ValueError(f"{searcher!r} is a multi-fidelity searcher: give fidelities=[...], the budgets "
                             "(epochs, iterations, ...) it may train to, e.g. [1, 3, 9, 27]")  # fmt: skip
        self._space_arg, self.space = space, make_space(space)
        self._name, self.direction, self.seed, self.continues = searcher, direction, int(seed), bool(continues)
        self._kwargs = dict(searcher_kwargs, max_queries=max_queries, fidelities=tuple(fidelities), workers=workers)
        options = make_options(searcher, **self._kwargs)  # names and values checked
        check_budget(Budget(max_queries=options.max_queries, seed=self.seed))
        self.trials: list[Trial] = []
        self._build()
        self._setup_base(storage, directory)

    def _settings(self) -> dict:
        kw = {k: v for k, v in self._kwargs.items() if k not in ("max_queries", "fidelities", "workers")}
        k = self._kwargs
        return dict(space=self._space_arg, searcher=self._name, direction=self.direction, seed=self.seed,
                    max_queries=k["max_queries"], fidelities=list(k["fidelities"]), workers=k["workers"],
                    continues=self.continues, directory=self.directory, **kw)  # fmt: skip

    def _build(self) -> None:
        self.searcher = make_searcher(self._name, self.space, **self._kwargs)
        runs = make_searcher(self._name, program_space(self.space), **self._kwargs)  # programs shared by shape
        self._schedule = MFSchedule(runs, jax.random.PRNGKey(self.seed), self.continues)
        self._running: dict[int, tuple[dict, int]] = {}  # trial number -> (job, worker slot)
        self._at: dict[tuple, int] = {}  # (tokens, fidelity index) -> the trial evaluated there
        self._arrival: dict[int, int] = {}  # trial number -> order its result arrived in

    @property
    def fidelities(self) -> tuple[float, ...]:
        return self.searcher.budgets

    @property
    def workers(self) -> int:
        return self.searcher.workers

    @property
    def spent(self) -> float:
        """Resource dispatched so far, in fidelity units (the budget is ``max_queries * fidelities[-1]``)."""
        return float(self._schedule.spent)

    # -- ask -------------------------------------------------------------------------------------------
    def ask(self) -> Trial:
        """The next trial: a new configuration at a low budget or a promotion (``trial.parent``)."""
        with self._lock:
            calls = self._schedule.step, self._schedule.blocked_at
            try:
                job, slot = self._schedule.ask()
            except (NoTrialNow, BudgetSpent) as e:
                if (self._schedule.step, self._schedule.blocked_at) != calls:  # the searcher was asked
                    self._journal({"event": "no_trial", "step": self._schedule.step})
                if isinstance(e, NoTrialNow):
                    raise NoTrialNow(self._waiting_message()) from None
                raise
            f, p = job["fidelity"], job["parent"]
            parent = self._at.get((tuple(job["tokens"].tolist()), p)) if p >= 0 else None
            trial = self._new_trial(job["tokens"], fidelity=f, budget=float(self.fidelities[f]), parent=parent)
            self._at[(tuple(job["tokens"].tolist()), f)] = trial.number
            self._running[trial.number] = (job, slot)
            return trial

    def _waiting_message(self) -> str:
        waiting = [t.number for t in self.pending()]
        return (f"{self._name} has no trial to start until a running one is told (a synchronous rung waits for "
                f"its last results): tell the pending trials {waiting} first, or let study.optimize run them "
                "(it waits); asha promotes asynchronously and never waits")  # fmt: skip

    def _ask_replayed(self, record: dict) -> Trial:
        trial = self.ask()
        saved = (record.get("fidelity"), record.get("parent"))
        if record["event"] == "ask" and (trial.fidelity, trial.parent) != saved:
            from nas.host.storage import StorageError

            raise StorageError(f"replaying trial {trial.number}: fidelity/parent {trial.fidelity}/{trial.parent}, "
                               f"the journal holds {record.get('fidelity')}/{record.get('parent')}")  # fmt: skip
        return trial

    def pending(self) -> list[Trial]:
        """Trials handed out and not yet told."""
        return [t for t in self.trials if t.state == "pending"]

    def _next_trial(self, exclude) -> Trial:
        again = [t for t in self.pending() if t.number not in exclude]
        return again[0] if again else self.ask()

    # -- tell ------------------------------------------------------------------------------------------
    def tell(self, trial: Trial | int, value: float | None, cost: float | None = None) -> None:
        """Records ``value`` for ``trial`` (a Trial or its number); None, NaN or an infinity: a failed evaluation.

        ``cost``: what the evaluation spent, in your unit (``optimize`` records its wall time in seconds)."""
        with self._lock:
            t = self.get_trial(trial)
            if t.state != "pending":
                raise ValueError(f"trial {t.number} is not pending (state {t.state!r})")
            v = as_value(value, t.number)
            if v is not None and is_nonfinite(v):
                import warnings

                warnings.warn(f"trial {t.number}: value {v}; recorded as a failed evaluation", stacklevel=2)
                v = None
            self._finish(t, v, "complete" if v is not None else "failed", cost)

    def _finish(self, trial: Trial, value, state: str, cost) -> None:
        with self._lock:
            job, slot = self._running.pop(trial.number)
            failed = state == "failed" or value is None
            score = -np.inf if failed else np.float32(self._sign() * value)
            self._schedule.tell(job, slot, score)
            trial.value, trial.state = (None, "failed") if state == "failed" else (value, state)
            trial.cost = None if cost is None else float(cost)
            trial.datetime_complete = now()
            self._arrival[trial.number] = len(self._arrival)
            self._journal_tell(trial)

    # -- the loop ----------------------------------------------------------------------------------------
    def optimize(self, fn, n_trials: int | None = None, n_workers: int = 1, backend=None,
                 catch: tuple[type[BaseException], ...] = (), retries: int = 0) -> MultiFidelityStudy:  # fmt: skip
        """Runs ``fn(trial)`` on ``n_workers`` workers until ``n_trials`` evaluations ran (None: until the budget is
        spent). Pending trials run first. ``backend``: None (in this thread for one worker, processes for more),
        ``"thread"``, ``"process"``, ``"ray"`` or a workers object (``nas.host.workers``). ``catch``: exceptions
        recorded as failed evaluations (any other is raised once the running trials are told; its trial stays
        pending); ``retries``: how often a trial whose worker died runs again before it is recorded as failed.

        Before the first trial, ``n_workers`` also sets the searcher's ``workers`` (its state is sized for
        them), so the study decides as the compiled engine with that many workers."""
        if isinstance(n_workers, bool) or not isinstance(n_workers, int) or n_workers < 1:
            raise ValueError(f"n_workers must be a positive integer, got {n_workers!r}")
        if n_trials is not None and (isinstance(n_trials, bool) or not isinstance(n_trials, int) or n_trials < 0):
            raise ValueError(f"n_trials must be a non-negative integer or None (until the budget is spent), "
                             f"got {n_trials!r}")  # fmt: skip
        if n_workers != self.workers and not self.trials:
            self._kwargs["workers"] = n_workers
            self._build()
            self._journal_header(reset=True)
        run_trials(self, fn, n_trials, make_backend(backend, n_workers), tuple(catch), int(retries))
        return self

    # -- results -------------------------------------------------------------------------------------------
    @property
    def best_trial(self) -> Trial:
        """The best trial completed at the top fidelity (ties: the one whose result arrived first)."""
        top = len(self.fidelities) - 1
        done = [t for t in self.trials if t.state == "complete" and t.fidelity == top]
        if not done:
            raise ValueError(f"no trial has completed at the top fidelity ({self.fidelities[top]:g}) yet")
        return max(done, key=lambda t: (np.float32(self._sign() * t.value), -self._arrival[t.number]))
