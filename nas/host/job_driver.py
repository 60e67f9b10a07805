"""The job driver: how a ``Study`` runs a multi-fidelity searcher (successive halving, Hyperband, BOHB,
ASHA, mf-BANANAS) for trainings you run.

``Study(space, searcher="asha", fidelities=[1, 3, 9, 27], ...)`` hands out trials that say how far to train:
``trial.budget`` (``fidelities[trial.fidelity]``) and, for a promotion, the trial whose training it continues
(``trial.parent``, its ``parent_checkpoint_dir``). Results may be told in any order while other trials run.
The decisions are the compiled searcher's own, through the engine's schedule (``nas.host.mf_schedule``):
given the results in the order they arrive, the study proposes and promotes exactly what
``nas.engine.multi_fidelity_runner`` does with the same seed and W workers (tested by replaying an engine
run's arrival order).

The budget is compute, as in the engine: ``max_resource`` in the fidelities' unit, the searcher's ``max_queries``
full evaluations (``max_resource / fidelities[-1]``); with ``continues=True`` (the
default: a promotion resumes its parent's checkpoint) a promotion is charged the difference of the
budgets. ``ask`` raises ``BudgetSpent`` once the budget is spent, ``NoTrialNow`` while a synchronous rung
waits for its last results. The incumbent (``best_trial``) is the best trial completed at the top fidelity
(ties: the earlier result), as the engine's reports.
"""

from __future__ import annotations

import numpy as np

from nas.engine.budget import Budget, check_budget
from nas.host import objectives as obj
from nas.host.mf_schedule import MFSchedule
from nas.host.programs import program_space
from nas.host.storage import StorageError
from nas.host.trials import BudgetSpent, NoTrialNow, Trial, now
from nas.searchers import available_searchers, make_options, make_searcher, searcher_class


def is_multi_fidelity(searcher) -> bool:
    """Whether ``searcher`` (a registered name or a searcher object) is a multi-fidelity one (the Study's job
    driver runs it)."""
    return bool(getattr(searcher_class(searcher) if isinstance(searcher, str) else searcher, "multi_fidelity", False))


def check_multi_fidelity(searcher: str) -> None:
    """A one-line error unless ``searcher`` is a registered multi-fidelity searcher."""
    if not is_multi_fidelity(searcher):
        raise ValueError(f"{searcher!r} is not a multi-fidelity searcher; choose one of "
                         f"{available_searchers(multi_fidelity=True)}")  # fmt: skip


class JobDriver:
    """A multi-fidelity searcher's jobs, worker slots and promotions inside a ``Study`` (module docstring)."""

    kind = "multi_fidelity"
    batch_size = 1  # one job per ask

    def __init__(self, study, searcher: str, fidelities, workers, continues, searcher_kwargs: dict):
        self.study = study
        if study.num_objectives > 1 or obj.is_multi_objective(searcher):
            raise ValueError(f"{searcher!r} is multi-fidelity: a study with directions= runs the single-fidelity "
                             f"multi-objective searchers {obj.multi_objective_searchers()}, MO-ASHA runs in "
                             "the compiled runner (configs/multiobjective.py)")  # fmt: skip
        if not fidelities and isinstance(searcher, str):
            raise ValueError(f"{searcher!r} is a multi-fidelity searcher: give fidelities=[...], the budgets "
                             "(epochs, iterations, ...) it may train to, e.g. [1, 3, 9, 27]")  # fmt: skip
        self.continues = True if continues is None else bool(continues)
        if not isinstance(searcher, str):  # a searcher object, built with its options (e.g. by make_searcher)
            self.name, self.instance, self.kwargs = type(searcher).__name__, searcher, {}
            self.build()
            return
        self.name, self.instance = searcher, None
        workers = 1 if workers is None else workers
        self.kwargs = dict(searcher_kwargs, max_queries=study.max_queries, fidelities=tuple(fidelities),
                           workers=workers)  # fmt: skip
        options = make_options(searcher, **self.kwargs)  # names and values checked
        check_budget(Budget(max_queries=options.max_queries, seed=study.budget_seed))
        self.build()

    def settings(self) -> dict:
        s, k = self.study, self.kwargs
        kw = {n: v for n, v in k.items() if n not in ("max_queries", "fidelities", "workers")}
        return dict(space=s._space_arg, searcher=self.name, direction=s.direction, seed=s.seed,
                    max_queries=k["max_queries"], fidelities=list(k["fidelities"]), workers=k["workers"],
                    continues=self.continues, directory=s._directory_setting(), ranges=s.ranges, **kw)  # fmt: skip

    def build(self) -> None:
        s = self.study
        if self.instance is not None:
            self.searcher = runs = self.instance
        else:
            self.searcher = make_searcher(self.name, s.space, **self.kwargs)
            runs = make_searcher(self.name, program_space(s.space), **self.kwargs)  # programs shared by shape
        self.schedule = MFSchedule(runs, s.key, self.continues)
        self._running: dict[int, tuple[dict, int]] = {}  # trial number -> (job, worker slot)
        self._at: dict[tuple, int] = {}  # (tokens, fidelity index) -> the trial evaluated there
        self._arrival: dict[int, int] = {}  # trial number -> order its result arrived in

    @property
    def fidelities(self) -> tuple[float, ...]:
        return self.searcher.budgets

    @property
    def workers(self) -> int:
        return self.searcher.workers

    def set_batch_size(self, batch_size: int) -> bool:
        raise ValueError(f"{self.name!r} hands out one trial per ask (a multi-fidelity searcher has no batch_size); "
                         "run several at once with optimize(..., n_workers=W)")  # fmt: skip

    def set_workers(self, n_workers: int) -> bool:
        """Before the first trial, rebuilds the searcher for ``n_workers`` (its state is sized for them), so the
        study decides as the compiled engine with that many workers; whether it changed."""
        if n_workers == self.workers or self.study.trials or self.instance is not None:
            return False
        self.kwargs["workers"] = n_workers
        self.build()
        return True

    def trials_left(self) -> None:
        return None  # the budget is compute: ask says when it is spent

    # -- ask -------------------------------------------------------------------------------------------
    def ask_one(self) -> Trial:
        s, schedule = self.study, self.schedule
        calls = schedule.step, schedule.blocked_at
        before = schedule.snapshot()  # a record that cannot be written leaves the schedule as it was
        try:
            try:
                job, slot = schedule.ask()
            except (NoTrialNow, BudgetSpent) as e:
                if (schedule.step, schedule.blocked_at) != calls:  # the searcher was asked
                    s._journal({"event": "no_trial", "step": schedule.step})
                if isinstance(e, NoTrialNow):
                    raise NoTrialNow(self._waiting_message()) from None
                raise
            f, p = job["fidelity"], job["parent"]
            config = tuple(job["tokens"].tolist())  # the key of _at, for the parent and for this trial
            parent = self._at.get((config, p)) if p >= 0 else None
            trial = s._new_trial(job["tokens"], fidelity=f, budget=float(self.fidelities[f]), parent=parent)
        except StorageError:
            schedule.restore(before)
            raise
        self._at[(config, f)] = trial.number
        self._running[trial.number] = (job, slot)
        return trial

    def ask(self, n):
        return self.ask_one() if n is None else [self.ask_one() for _ in range(int(n))]

    def job(self, trial: Trial) -> dict:
        """The job a pending trial runs: ``{"tokens", "fidelity", "parent"}`` (``parent``: a fidelity index, -1
        for none), as the engine dispatches it."""
        return self._running[trial.number][0]

    def _waiting_message(self) -> str:
        waiting = [t.number for t in self.study.pending()]
        return (f"{self.name} has no trial to start until a running one is told (a synchronous rung waits for "
                f"its last results): tell the pending trials {waiting} first, or let study.optimize run them "
                "(it waits); asha promotes asynchronously and never waits")  # fmt: skip

    def ask_replayed(self, record: dict) -> Trial:
        trial = self.ask_one()
        saved = (record.get("fidelity"), record.get("parent"))
        if record["event"] == "ask" and (trial.fidelity, trial.parent) != saved:
            raise StorageError(f"replaying trial {trial.number}: fidelity/parent {trial.fidelity}/{trial.parent}, "
                               f"the journal holds {record.get('fidelity')}/{record.get('parent')}")  # fmt: skip
        return trial

    # -- tell ------------------------------------------------------------------------------------------
    def finish(self, trial: Trial, value, state: str, cost) -> None:
        """Records how ``trial`` ended and tells the searcher (its worker slot frees)."""
        job, slot = self._running[trial.number]
        failed = state == "failed" or value is None
        score = -np.inf if failed else np.float32(self.study._sign() * value)
        value, state = (None, "failed") if state == "failed" else (value, state)
        complete, cost = now(), None if cost is None else float(cost)
        self.study._journal_tell(trial, state, value, None, cost, complete)  # written first: a failure changes nothing
        self.schedule.tell(job, slot, score)
        del self._running[trial.number]
        trial.value, trial.state, trial.cost, trial.datetime_complete = value, state, cost, complete
        self._arrival[trial.number] = len(self._arrival)

    # -- results -------------------------------------------------------------------------------------------
    def best_trial(self) -> Trial:
        """The best trial completed at the top fidelity (ties: the one whose result arrived first)."""
        top = len(self.fidelities) - 1
        done = [t for t in self.study.trials if t.state == "complete" and t.fidelity == top]
        if not done:
            raise ValueError(f"no trial has completed at the top fidelity ({self.fidelities[top]:g}) yet")
        return max(done, key=lambda t: (np.float32(self.study._sign() * t.value), -self._arrival[t.number]))

    def best_trials(self) -> list[Trial]:
        """The trials completed at the top fidelity with the best value, in trial order."""
        top = len(self.fidelities) - 1
        done = [t for t in self.study.trials if t.state == "complete" and t.fidelity == top]
        if not done:
            return []
        best = np.float32(self.best_trial().value)
        return [t for t in done if np.float32(t.value) == best]
