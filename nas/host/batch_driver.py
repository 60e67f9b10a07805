"""The batch driver: how a ``Study`` runs a single-fidelity searcher.

The searcher proposes a batch of ``batch_size`` configurations per step (its compiled ``ask``); the
study hands them out one by one and, once every trial of the batch is told, tells the searcher the
whole batch (its compiled ``tell``), in the order the trials were asked. Keys follow
``nas.engine.runner.search_step`` (init ``fold_in(key, INIT_FOLD)``, step ``t`` splits ``fold_in(key, t)``),
so a study whose objective reads a table proposes exactly the strings of the compiled runner with the
same seed. What the searcher is told for a trial (``score``): the value, negated to minimize; a pruned
trial's last value (unless ``pruned='failed'``); ``-inf`` for a failed one; a multi-objective study's
row of values (``nas.host.objectives``).
"""

from __future__ import annotations

import numpy as np

from nas.engine.budget import Budget, check_budget
from nas.host import objectives as obj
from nas.host.programs import program_space, study_programs
from nas.host.trials import BudgetSpent, NoTrialNow, Trial, now
from nas.searchers import make_options, make_searcher


class BatchDriver:
    """A single-fidelity searcher's batches inside a ``Study`` (module docstring)."""

    kind = "single"

    def __init__(self, study, searcher: str, fidelities, pruner, pruned: str, searcher_kwargs: dict):
        self.study = study
        if study.num_objectives > 1 and (pruner is not None or fidelities is not None):
            raise ValueError("a pruner reads one value per step: a study with several directions takes no pruner "
                             "or fidelities (as Optuna's)")  # fmt: skip
        if pruned not in ("last_value", "failed"):
            raise ValueError(f"pruned must be 'last_value' (the searcher is told a pruned trial's last reported "
                             f"value) or 'failed' (-inf), got {pruned!r}")  # fmt: skip
        if fidelities is not None and pruner is None:
            raise ValueError("fidelities= are the budgets of a pruner's rungs (pruner='asha' or 'hyperband') or of a "
                             "multi-fidelity searcher; give a pruner, or leave fidelities out")  # fmt: skip
        self.instance = None if isinstance(searcher, str) else searcher  # a searcher object, built with its options
        if self.instance is None:
            options = make_options(searcher, max_queries=study.max_queries, **searcher_kwargs)  # names, values checked
        else:
            options = searcher.options
        # the budget against the space's configurations before the searcher is built (nas.engine.budget)
        self._budget = Budget(max_queries=options.max_queries, batch_size=options.batch_size, seed=study.budget_seed,
                              names={"max_queries": study.budget_name} if self.instance is None else {})
        check_budget(self._budget, study.space)
        self.name = searcher if self.instance is None else type(searcher).__name__
        self.kwargs, self.pruned = dict(searcher_kwargs), pruned
        self.build()

    def settings(self) -> dict:
        s = self.study
        several = s.num_objectives > 1
        return dict(space=s._space_arg, searcher=self.name, direction=s.direction, seed=s.seed,
                    directions=list(s.directions) if several else None, max_queries=s.max_queries,
                    pruner=None if s.pruner is None else s.pruner.spec(), pruned=self.pruned,
                    directory=s._directory_setting(), ranges=s.ranges, **self.kwargs)  # fmt: skip

    def build(self) -> None:
        s = self.study
        if self.instance is not None:
            self.searcher = runs = self.instance  # its own programs
        else:
            self.searcher = make_searcher(self.name, s.space, max_queries=s.max_queries, **self.kwargs)
            runs = make_searcher(self.name, program_space(s.space), max_queries=s.max_queries, **self.kwargs)
        check_budget(self._budget, s.space, self.searcher)  # and the memory of its state
        self._key = s.key
        self._init_fn, self._ask_fn, self._tell_fn = study_programs(runs)
        self._state = None  # initialized by the first ask (a batch_size set in optimize rebuilds first)
        self._step = 0
        self._batch: list[Trial] = []  # trials of the searcher's current batch
        self._batch_tokens = None
        self._k_tell = None

    @property
    def batch_size(self) -> int:
        return self.searcher.batch_size

    def set_batch_size(self, batch_size: int) -> bool:
        """Rebuilds the searcher with ``batch_size`` before the first trial; whether it changed."""
        if int(batch_size) == self.batch_size:
            return False
        if self.study.trials or self.instance is not None:
            raise ValueError(
                f"batch_size can change only before the first trial of a searcher the study builds (the searcher "
                f"runs with {self.batch_size})"
            )
        self.kwargs["batch_size"] = int(batch_size)
        self.build()
        return True

    def set_workers(self, n_workers: int) -> bool:
        return False  # the searcher's batches do not depend on how many run at once

    def trials_left(self) -> int:
        """Trials ``optimize`` may still run: the budget's, and the pending ones."""
        return self.study.max_queries - len(self.study.trials) + len(self.study.pending())

    def room(self) -> int:
        """Trials that can be handed out now: the rest of the current batch, within the budget."""
        in_batch = self.batch_size - len(self._batch) if self._batch_tokens is not None else self.batch_size
        return min(in_batch, self.study.max_queries - len(self.study.trials))

    # -- ask -------------------------------------------------------------------
    def _new_batch(self) -> None:
        if self._state is None:
            self._state = self._init_fn(self._key)
        tokens, self._state, self._k_tell = self._ask_fn(self._key, self._step, self._state)
        self._batch_tokens = np.asarray(tokens)  # one transfer per batch; trials index it on the host
        self._batch = []

    def ask_one(self) -> Trial:
        s = self.study
        if len(s.trials) >= s.max_queries:
            raise BudgetSpent(f"the study's budget of {s.budget_name}={s.max_queries} trials is spent")
        if self._batch_tokens is None:
            self._new_batch()
        elif len(self._batch) == self.batch_size:
            raise NoTrialNow(
                f"all {self.batch_size} trials of the searcher's current batch are handed out; tell their values "
                f"before asking for more (for more trials in parallel, create the Study with batch_size=...)"
            )
        trial = s._new_trial(np.asarray(self._batch_tokens[len(self._batch)], np.int32))
        self._batch.append(trial)
        return trial

    def ask(self, n):
        if n is None:
            return self.ask_one()
        room = self.batch_size - len(self._batch) if self._batch_tokens is not None else self.batch_size
        left = self.study.max_queries - len(self.study.trials)
        if n > min(room, left):
            why = (
                f"{left} trials of the budget are left"
                if left < room
                else (
                    f"{room} trials are left in the searcher's current batch of {self.batch_size} (tell their values "
                    "first, or create the Study with a larger batch_size)"
                )
            )
            raise ValueError(f"ask({n}): only {min(room, left)} can be handed out now; {why}")
        return [self.ask_one() for _ in range(int(n))]

    def ask_replayed(self, record: dict) -> Trial:
        return self.ask_one()

    # -- tell ------------------------------------------------------------------
    def finish(self, trial: Trial, value, state: str, cost) -> None:
        """Records how ``trial`` ended and tells the searcher once its batch is complete."""
        if trial.state != "pending" or trial not in self._batch:  # by identity: a Trial compares as itself (eq=False)
            raise ValueError(f"trial {trial.number} is not a pending trial of this study (state {trial.state!r})")
        value = None if state == "failed" else value
        complete, cost = now(), None if cost is None else float(cost)
        if self.study.num_objectives > 1:  # a pruned trial (TrialPruned from the objective) keeps no vector
            keep = value is not None and state == "complete"
            values, value = ([float(v) for v in value] if keep else None), None
        else:
            values = None
        self.study._journal_tell(trial, state, value, values, cost, complete)  # first: a failed write changes nothing
        if self.study.num_objectives > 1:
            trial.values = values
        trial.value, trial.state, trial.cost, trial.datetime_complete = value, state, cost, complete
        self._finish_batch()

    def score(self, trial: Trial) -> float:
        """What the searcher is told (module docstring)."""
        s = self.study
        if s.num_objectives > 1:  # a row to maximize (nas.host.objectives); a failed trial: -inf throughout
            return obj.told_row(trial.values if trial.state == "complete" else None, s.directions)
        counts = trial.state == "complete" or (trial.state == "pruned" and self.pruned == "last_value")
        return s._sign() * trial.value if counts and trial.value is not None else -np.inf

    def _finish_batch(self) -> None:
        """Tells the searcher once every trial of its batch is told."""
        if len(self._batch) == self.batch_size and all(b.state != "pending" for b in self._batch):
            scores = [self.score(b) for b in self._batch]
            scores = np.asarray(scores, np.float32)  # the program takes the host array (no extra dispatch)
            self._state, _ = self._tell_fn(self._k_tell, self._batch_tokens, scores, self._state)
            self._step += 1
            self._batch, self._batch_tokens = [], None

    # -- results -------------------------------------------------------------------
    def best_trials(self) -> list[Trial]:
        s = self.study
        done = [t for t in s.trials if t.state == "complete"]
        if s.num_objectives == 1:
            best = self.best_trial().value if done else None
            return [t for t in done if t.value == best]
        return obj.pareto_front(done, s.directions)

    def best_trial(self) -> Trial:
        s = self.study
        if s.num_objectives > 1:
            raise RuntimeError("a study with several directions has no single best trial: use study.best_trials, "
                               "the Pareto front")  # fmt: skip
        done = [t for t in s.trials if t.state == "complete"]
        if not done:
            raise ValueError("no completed trial yet")
        pick = min if s.direction == "minimize" else max
        return pick(done, key=lambda t: t.value)
