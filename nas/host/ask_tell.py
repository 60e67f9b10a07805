"""Host ask/tell: the registered searchers driven by any Python objective.

For objectives that are not JAX (a training script, a simulator, a function
you write), the same pure searchers run one step at a time from Python, in
the style of Optuna::

    from nas.host.ask_tell import Study

    def objective(p):                       # any callable returning a number
        return (p["lr"] - 0.01) ** 2 + 0.1 * p["layers"]

    study = Study({"lr": [0.001, 0.003, 0.01, 0.03], "layers": [1, 2, 3, 4]},
                  searcher="regularized_evolution", direction="minimize", seed=0,
                  max_queries=12, population_size=6, tournament_size=3)
    study.optimize(objective, n_trials=12)
    study.best_params, study.best_value

or by hand: ``trial = study.ask(); study.tell(trial, objective(trial.params))``.

Batches for parallel evaluation: ``Study(..., batch_size=4)`` makes the
searcher propose 4 strings per step; ``study.ask(4)`` hands them out, and
``study.optimize(fn, n, batch_size=4, executor=ThreadPoolExecutor(4))``
evaluates each batch in parallel. The searcher updates once all trials of its
batch are told (its ``tell`` takes the whole batch). A trial handed out and
never told (its evaluation crashed) is evaluated again by the next
``optimize``; ``study.pending()`` lists such trials.

Trainings of your own (docs/tuner.md): a multi-fidelity searcher (``Study(space, "asha",
fidelities=[1, 3, 9, 27])``) makes this a ``nas.host.mf_study.MultiFidelityStudy``, whose trials carry a
budget and the checkpoint they continue; ``pruner="asha"`` or ``"hyperband"`` (``nas.host.pruning``,
with ``fidelities``) prunes trainings in place, the objective then getting the trial
(``trial.report``, ``trial.should_prune``); ``optimize(..., n_workers=W, backend=...)`` runs trials on
workers (``nas.host.workers``); ``storage=`` keeps a journal that ``Study.load`` resumes
(``nas.host.study_base``).

Values: a real number (int or float), or None for a failed evaluation (the
searcher sees ``-inf``, the score of an invalid string, and the trial never
becomes the best). ``direction="minimize"`` feeds ``-value`` to the searchers
(they maximize). Several objectives (``directions=["minimize", "maximize"]`` with a
multi-objective searcher such as ``nsga2``): a list of numbers per trial, ``trial.values``,
``study.best_trials`` the Pareto front (``nas.host.objectives``). ``tell`` refuses NaN, infinities,
strings, booleans, arrays and the like with a clear error; ``optimize`` records a NaN or infinite
objective value as a failed evaluation, with a warning.

Keys follow ``nas.engine.runner.search_step`` (init ``fold_in(key, INIT_FOLD)``, step
``t`` splits ``fold_in(key, t)``), so a Study whose objective reads a table
proposes exactly the strings of the compiled runner with the same seed.

Speed: the first ``ask`` and ``tell`` of a Study compile the searcher's programs (XLA, on a
CPU a few seconds for evolution, a minute or more for a GP or a policy searcher); evaluating
a toy objective takes microseconds, so a small study's time is almost all compilation. The
programs are shared by every Study in the process with the same searcher options on a space
of the same shape (a plain ``{name: [values]}`` space: the same number of values per
hyperparameter), and searchers whose steps are gathers and compares (random search,
evolution, local search: those that set ``xla_optimization_level``) compile at XLA's level
0, which halves their compile time; a step still takes about a millisecond. JAX's persistent
compilation cache keeps the programs across processes: a Study turns it on in ``~/.cache/nasjax/jax``
unless the process configured one (``nas.engine.devices.default_compilation_cache``;
``NASJAX_COMPILATION_CACHE=''`` keeps it off).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from nas.core.searcher import available_searchers, make_options, make_searcher, searcher_class
from nas.engine.budget import Budget, check_budget
from nas.host import objectives as obj
from nas.host.batch_loop import optimize_in_batches
from nas.host.programs import program_space, study_programs
from nas.host.pruning import make_pruner
from nas.host.study_base import StudyBase
from nas.host.study_space import make_space
from nas.host.trials import BudgetSpent, NoTrialNow, Trial, nonfinite, now, read_values
from nas.host.workers import make_backend, run_trials
from spaces.base import Space


class Study(StudyBase):
    """Optuna-style ask/tell over a registered searcher (see the module doc); a multi-fidelity searcher
    makes it a ``nas.host.mf_study.MultiFidelityStudy``."""

    kind = "single"

    def __new__(cls, *args, **kwargs):
        searcher = args[1] if len(args) > 1 else kwargs.get("searcher", "regularized_evolution")
        if cls is Study and isinstance(searcher, str) and getattr(searcher_class(searcher), "multi_fidelity", False):
            if kwargs.get("directions") is not None or obj.is_multi_objective(searcher):
                raise ValueError(f"{searcher!r} is multi-fidelity: a study with directions= runs the single-fidelity "
                                 f"multi-objective searchers {obj.multi_objective_searchers()}, MO-ASHA runs in "
                                 "the compiled runner (configs/multiobjective.py)")  # fmt: skip
            from nas.host.mf_study import MultiFidelityStudy

            return MultiFidelityStudy(*args, **kwargs)  # not a Study: Python does not call __init__ again
        return super().__new__(cls)

    def __init__(
        self,
        space: Space | dict[str, Any],
        searcher: str = "regularized_evolution",
        direction: str | None = None,
        seed: int = 0,
        max_queries: int = 100,
        *,
        directions=None,
        fidelities=None,
        pruner=None,
        pruned: str = "last_value",
        storage=None,
        directory=None,
        **searcher_kwargs,
    ):
        searcher_kwargs = dict(searcher_kwargs)
        self.directions = obj.resolve_directions(direction, directions, searcher, searcher_kwargs)
        self.num_objectives = len(self.directions)
        if self.num_objectives > 1 and (pruner is not None or fidelities is not None):
            raise ValueError("a pruner reads one value per step: a study with several directions takes no pruner "
                             "or fidelities (as Optuna's)")  # fmt: skip
        self._space_arg, self.space = space, make_space(space)
        if getattr(searcher_class(searcher), "multi_fidelity", False):
            raise ValueError(f"{searcher!r} is a multi-fidelity searcher: build it with Study(space, {searcher!r}, "
                             f"fidelities=[...]); single-fidelity searchers: {available_searchers()}")  # fmt: skip
        if pruned not in ("last_value", "failed"):
            raise ValueError(f"pruned must be 'last_value' (the searcher is told a pruned trial's last reported "
                             f"value) or 'failed' (-inf), got {pruned!r}")  # fmt: skip
        if fidelities is not None and pruner is None:
            raise ValueError("fidelities= are the budgets of a pruner's rungs (pruner='asha' or 'hyperband') or of a "
                             "multi-fidelity searcher; give a pruner, or leave fidelities out")  # fmt: skip
        options = make_options(searcher, max_queries=max_queries, **searcher_kwargs)  # names and values checked
        # the budget against the space's configurations before the searcher is built (nas.engine.budget)
        self._budget = Budget(max_queries=options.max_queries, batch_size=options.batch_size, seed=seed)
        check_budget(self._budget, self.space)
        self.direction = self.directions[0] if self.num_objectives == 1 else None  # Optuna's: one objective only
        self.seed = int(seed)
        self.max_queries = int(max_queries)
        self._name = searcher
        self._kwargs = dict(searcher_kwargs)
        self.trials: list[Trial] = []
        self.pruned = pruned
        self._build()
        self._setup_base(storage, directory, make_pruner(pruner, fidelities))

    def _settings(self) -> dict:
        several = self.num_objectives > 1
        return dict(space=self._space_arg, searcher=self._name, direction=self.direction, seed=self.seed,
                    directions=list(self.directions) if several else None, max_queries=self.max_queries,
                    pruner=None if self.pruner is None else self.pruner.spec(), pruned=self.pruned,
                    directory=self.directory, **self._kwargs)  # fmt: skip

    def _build(self) -> None:
        self.searcher = make_searcher(self._name, self.space, max_queries=self.max_queries, **self._kwargs)
        check_budget(self._budget, self.space, self.searcher)  # and the memory of its state
        runs = make_searcher(self._name, program_space(self.space), max_queries=self.max_queries, **self._kwargs)
        self._key = jax.random.PRNGKey(self.seed)
        self._init_fn, self._ask_fn, self._tell_fn = study_programs(runs)
        self._state = None  # initialized by the first ask (a batch_size set in optimize rebuilds first)
        self._step = 0
        self._batch: list[Trial] = []  # trials of the searcher's current batch
        self._batch_tokens = None
        self._k_tell = None

    @property
    def batch_size(self) -> int:
        return self.searcher.batch_size

    # -- ask -------------------------------------------------------------------
    def _new_batch(self) -> None:
        if self._state is None:
            self._state = self._init_fn(self._key)
        tokens, self._state, self._k_tell = self._ask_fn(self._key, self._step, self._state)
        self._batch_tokens = tokens
        self._batch = []

    def _ask_one(self) -> Trial:
        if len(self.trials) >= self.max_queries:
            raise BudgetSpent(f"the study's budget of max_queries={self.max_queries} trials is spent")
        if self._batch_tokens is None:
            self._new_batch()
        elif len(self._batch) == self.batch_size:
            raise NoTrialNow(
                f"all {self.batch_size} trials of the searcher's current batch are handed out; tell their values "
                f"before asking for more (for more trials in parallel, create the Study with batch_size=...)"
            )
        trial = self._new_trial(np.asarray(self._batch_tokens[len(self._batch)], np.int32))
        self._batch.append(trial)
        return trial

    def ask(self, n: int | None = None) -> Trial | list[Trial]:
        """One trial, or a list of ``n`` (at most the trials left in the searcher's current batch).

        A trial handed out and never told (its evaluation crashed, the process
        was interrupted) is handed out again by ``optimize``; ``pending()``
        lists them.
        """
        with self._lock:
            return self._ask(n)

    def _ask(self, n):
        if n is None:
            return self._ask_one()
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"ask(n): n must be a non-negative integer, got {n!r}")
        room = self.batch_size - len(self._batch) if self._batch_tokens is not None else self.batch_size
        left = self.max_queries - len(self.trials)
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
        return [self._ask_one() for _ in range(int(n))]

    def pending(self) -> list[Trial]:
        """Trials handed out and not yet told."""
        return [t for t in self._batch if t.state == "pending"]

    def _next_trial(self, exclude) -> Trial:
        again = [t for t in self.pending() if t.number not in exclude]
        return again[0] if again else self.ask()

    def _passes_trial(self) -> bool:
        return self.pruner is not None

    # -- tell ------------------------------------------------------------------
    def tell(self, trial: Trial | int, value) -> None:
        """Records ``value`` (a real number, a list of one per direction; None = failed) for ``trial`` (a Trial
        or its number); updates the searcher when its batch is complete."""
        with self._lock:
            t = self.get_trial(trial)
            v = read_values(value, t.number, self.num_objectives)
            if v is not None and nonfinite(v):
                raise ValueError(
                    f"objective value of trial {t.number} ({t.params}) is {v}; return finite numbers, "
                    "or tell(trial, None) to record a failed evaluation"
                )
            self._finish(t, v, "failed" if v is None else "complete", None)

    def _finish(self, trial: Trial, value, state: str, cost) -> None:
        with self._lock:
            if trial.state != "pending" or not any(trial is b for b in self._batch):
                raise ValueError(f"trial {trial.number} is not a pending trial of this study (state {trial.state!r})")
            value = None if state == "failed" else value
            if self.num_objectives > 1:  # a pruned trial (TrialPruned from the objective) keeps no vector
                complete = value is not None and state == "complete"
                trial.values, trial.state = ([float(v) for v in value] if complete else None), state
            else:
                trial.value, trial.state = value, state
            trial.cost = None if cost is None else float(cost)
            trial.datetime_complete = now()
            self._journal_tell(trial)
            self._finish_batch()

    def _score(self, trial: Trial) -> float:
        """What the searcher is told: the value (negated to minimize), a pruned trial's last value unless
        ``pruned='failed'``, ``-inf`` for a failed one."""
        if self.num_objectives > 1:  # a row to maximize (nas.host.objectives); a failed trial: -inf throughout
            return obj.told_row(trial.values if trial.state == "complete" else None, self.directions)
        counts = trial.state == "complete" or (trial.state == "pruned" and self.pruned == "last_value")
        return self._sign() * trial.value if counts and trial.value is not None else -np.inf

    def _finish_batch(self) -> None:
        """Tells the searcher once every trial of its batch is told."""
        if len(self._batch) == self.batch_size and all(b.state != "pending" for b in self._batch):
            scores = [self._score(b) for b in self._batch]
            scores = jnp.asarray(np.asarray(scores, np.float32))
            self._state, _ = self._tell_fn(self._k_tell, self._batch_tokens, scores, self._state)
            self._step += 1
            self._batch, self._batch_tokens = [], None

    # -- the loop ----------------------------------------------------------------
    def optimize(
        self,
        fn: Callable[[Any], float],
        n_trials: int | None = None,
        batch_size: int | None = None,
        executor=None,
        catch: tuple[type[BaseException], ...] = (),
        n_workers: int | None = None,
        backend=None,
        retries: int = 0,
    ) -> Study:
        """Evaluates ``fn(params)`` for ``n_trials`` trials (default: the rest of the budget; 0 = none).

        With a pruner the objective gets the trial (``fn(trial)``: ``trial.params``, ``trial.report``,
        ``trial.should_prune``, ``TrialPruned``). With ``n_workers`` or ``backend`` the trials run on workers
        as they become free (``nas.host.workers``: ``"process"``, ``"thread"``, ``"ray"``; ``retries`` for a
        trial whose worker died); the searcher still updates on whole batches, so give it
        ``batch_size >= n_workers`` to keep every worker busy.

        ``batch_size`` sets the searcher's batch size (allowed before the first trial). Without workers each
        batch is evaluated in this process or with ``executor.submit`` (``nas.host.batch_loop``: trials never
        told come first; NaN, infinities and ``catch`` exceptions mark a trial failed; another exception
        propagates after the batch's other values are told, and its trial stays pending).
        """
        if batch_size is not None and int(batch_size) != self.batch_size:
            if self.trials:
                raise ValueError(
                    f"batch_size can change only before the first trial (the searcher runs with {self.batch_size})"
                )
            self._kwargs["batch_size"] = int(batch_size)
            self._build()
            self._journal_header(reset=True)  # a journal's settings say the batch size the trials ran with
        available = self.max_queries - len(self.trials) + len(self.pending())
        if n_trials is None:
            n_trials = available
        if isinstance(n_trials, bool) or not isinstance(n_trials, (int, np.integer)) or n_trials < 0:
            raise ValueError(f"n_trials must be a non-negative integer (0 runs nothing), got {n_trials!r}")
        if n_trials > available:
            raise ValueError(
                f"n_trials={n_trials} exceeds the remaining budget ({available} of max_queries={self.max_queries})"
            )
        if n_workers is not None or backend is not None or self.pruner is not None:
            if executor is not None:
                raise ValueError("give either executor= (one batch at a time) or n_workers=/backend=, not both")
            workers = make_backend(backend, 1 if n_workers is None else int(n_workers))
            run_trials(self, fn, int(n_trials), workers, tuple(catch), int(retries))
            return self
        optimize_in_batches(self, fn, int(n_trials), executor, tuple(catch))
        return self

    # -- results -------------------------------------------------------------------
    @property
    def best_trials(self) -> list[Trial]:
        """The completed trials on the Pareto front of the directions (one objective: those with the best
        value), in trial order, as Optuna's ``study.best_trials``."""
        done = [t for t in self.trials if t.state == "complete"]
        if self.num_objectives == 1:
            return [t for t in done if t.value == self.best_trial.value] if done else []
        return obj.pareto_front(done, self.directions)

    @property
    def best_trial(self) -> Trial:
        if self.num_objectives > 1:
            raise RuntimeError("a study with several directions has no single best trial: use study.best_trials, "
                               "the Pareto front")  # fmt: skip
        done = [t for t in self.trials if t.state == "complete"]
        if not done:
            raise ValueError("no completed trial yet")
        pick = min if self.direction == "minimize" else max
        return pick(done, key=lambda t: t.value)
