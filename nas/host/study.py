"""``Study``: the registered searchers driven by any Python objective, in the style of Optuna.

For objectives that are not JAX (a training script, a simulator, a function you write), the same pure
searchers as the compiled runner run one step at a time from Python::

    from nas.host.study import create_study

    def objective(trial):                   # any callable of the trial, returning a number
        lr = trial.suggest_categorical("lr", [0.001, 0.003, 0.01, 0.03])
        return (lr - 0.01) ** 2 + 0.1 * trial.params["layers"]

    study = create_study({"lr": [0.001, 0.003, 0.01, 0.03], "layers": [1, 2, 3, 4]},
                         searcher="regularized_evolution", direction="minimize", seed=0,
                         max_trials=12, population_size=6, tournament_size=3)
    study.optimize(objective, n_trials=12)
    study.best_params, study.best_value

or by hand: ``trial = study.ask(); study.tell(trial, objective(trial.params))``.

One class for every searcher; what the searcher is decides the driver inside, chosen once:

- a single-fidelity searcher runs in batches (``nas.host.batch_driver``): ``Study(..., batch_size=4)``
  makes it propose 4 configurations per step, ``study.ask(4)`` hands them out, and it updates once all
  trials of its batch are told; ``pruner="asha"`` or ``"hyperband"`` with ``fidelities`` prunes trainings
  in place (``nas.host.pruning``);
- a multi-fidelity searcher (``Study(space, "asha", fidelities=[1, 3, 9, 27])``) runs jobs
  (``nas.host.job_driver``): its trials carry a budget and, for a promotion, the trial (and checkpoint)
  they continue; ``workers=W`` sizes it for W trainings at once.

**Telling a value** (``tell(trial, value, cost=None)``, the same rule for every searcher): a real number
(int or float; a list of one per direction in a multi-objective study) is the trial's result; ``None`` is
a failed evaluation (the searcher sees ``-inf``, the score of an invalid string, and the trial never
becomes the best); NaN or an infinity is a failed evaluation too, with a warning (as Optuna's ``tell``);
anything else (a string, a bool, an array, a list of the wrong length) raises a one-line ``TypeError``.
``cost`` is what the evaluation spent, in your unit (``optimize`` records its wall time in seconds).
``direction="minimize"`` feeds ``-value`` to the searchers (they maximize); ``directions=[...]`` with a
multi-objective searcher (``nsga2``) keeps ``trial.values`` and ``best_trials``, the Pareto front
(``nas.host.objectives``).

``optimize(fn, n_trials, n_workers=W, backend=..., executor=...)`` runs the trials on workers
(``nas.host.workers``: inline, threads, an executor's threads, processes, Ray) through one loop
(``nas.host.optimize``); the objective always gets the trial (``nas.host.trials``: ``trial.params``,
``trial.suggest_*``, ``trial.budget``, ``trial.report(value, step)``, ``trial.should_prune()``). A trial
handed out and never told (its evaluation crashed) is evaluated again by the next ``optimize``;
``study.pending()`` lists such trials.
``storage=`` keeps a journal that ``load_study`` resumes (``nas.host.study_base``).

**The budget** is one named argument: ``max_trials=`` for a single-fidelity searcher (the trials it plans
for), ``max_resource=`` for a multi-fidelity one (compute in the fidelities' unit, a whole number of full
trainings: ``max_resource=20 * 27`` with ``fidelities=[1, 3, 9, 27]``); default 100 trials or full
trainings. ``optimize(n_trials=)`` is how many trials one call runs. nasjax 0.2's ``max_queries=`` (trials,
or full trainings) works for a release with a ``DeprecationWarning``; a study file keeps the budget as the
searcher's ``max_queries`` and loads as it was written.

Speed: the first ``ask`` and ``tell`` compile the searcher's programs (XLA, on a CPU a few seconds for
evolution, a minute or more for a GP or a policy searcher), shared by every Study in the process with the
same searcher options on a space of the same shape (``nas.host.programs``); JAX's persistent compilation
cache keeps them across processes (``nas.engine.devices.default_compilation_cache``;
``NASJAX_COMPILATION_CACHE=''`` keeps it off).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from nas.engine.devices import inline_cpu_dispatch
from nas.host import objectives as obj
from nas.host.batch_driver import BatchDriver
from nas.host.job_driver import JobDriver, is_multi_fidelity
from nas.host.optimize import check_arguments, run_optimize
from nas.host.progress import make_progress
from nas.host.pruning import make_pruner
from nas.host.study_base import StudyBase
from nas.host.study_budget import study_budget
from nas.host.study_space import make_space, resolve_ranges
from nas.host.suggest import declarations
from nas.host.trials import Trial, as_cost, nonfinite, read_values
from nas.host.workers import make_workers
from spaces.base import Space

STATES_TOLD = ("complete", "failed", "pruned")


class Study(StudyBase):
    """Optuna-style ask/tell over a registered searcher (the module docstring: drivers, the rule of ``tell``).

    ``space``: a ``Space`` or a dict (``{name: [values] | Float | Int}``, ``nas.host.study_space``);
    ``searcher``: a registered name (``available_searchers()``), or a searcher object built on ``space`` (with
    its options: a searcher of your own); ``seed``: an integer, or a JAX PRNG key (the compiled runner's, to
    replay a run); ``max_trials`` or ``max_resource``: the budget (the module docstring; ``max_queries``: nasjax
    0.2's, deprecated);
    ``fidelities``: the budgets a pruner's rungs or a multi-fidelity searcher train to; ``workers``,
    ``continues``: a multi-fidelity searcher's (trainings at once; whether a promotion resumes its parent's
    checkpoint); ``ranges``: how declared ``Float``/``Int`` ranges are searched, ``"continuous"`` (fine grids,
    for ``tpe``, ``tpe_hyperband`` and ``random_search``) or ``"grid"`` (None: the searcher's way;
    ``nas.host.study_space.resolve_ranges``); other keywords are the searcher's options."""

    def __init__(
        self,
        space: Space | dict[str, Any] | None = None,
        searcher: str = "regularized_evolution",
        direction: str | None = None,
        seed: int = 0,
        max_queries: int | None = None,
        *,
        max_trials: int | None = None,
        max_resource: float | None = None,
        directions=None,
        fidelities=None,
        pruner=None,
        pruned: str = "last_value",
        workers: int | None = None,
        continues: bool | None = None,
        storage=None,
        directory=None,
        ranges: str | None = None,
        **searcher_kwargs,
    ):
        searcher_kwargs = dict(searcher_kwargs)
        if space is None:
            raise TypeError(NO_SPACE)
        inline_cpu_dispatch()  # before JAX starts: a trial's small programs run in this thread (nas.engine.devices)
        fidelities, workers = _check_arguments(searcher, fidelities, workers, continues)
        if not isinstance(searcher, str) and (searcher_kwargs or fidelities is not None or workers is not None):
            raise ValueError(f"{type(searcher).__name__} is a searcher object, built with its options: give the "
                             "Study none (or give the searcher's registered name and its options)")  # fmt: skip
        jobs = is_multi_fidelity(searcher)
        if jobs and (directions is not None or obj.is_multi_objective(searcher)):
            raise ValueError(f"{searcher!r} is multi-fidelity: a study with directions= runs the single-fidelity "
                             f"multi-objective searchers {obj.multi_objective_searchers()}, MO-ASHA runs in "
                             "the compiled runner (configs/multiobjective.py)")  # fmt: skip
        self.budget_name = "max_queries" if max_queries is not None else "max_resource" if jobs else "max_trials"
        max_queries = study_budget(searcher, jobs, fidelities, max_queries, max_trials, max_resource)
        self.directions = obj.resolve_directions(direction, directions, searcher, searcher_kwargs)
        self.num_objectives = len(self.directions)
        self.direction = self.directions[0] if self.num_objectives == 1 else None  # Optuna's: one objective only
        self.ranges = resolve_ranges(searcher, ranges)  # fine grids for tpe and random search; in the study file
        self._space_arg, self.space = space, make_space(space, searcher=searcher, ranges=ranges)
        self._declared = declarations(space) if isinstance(space, dict) else None  # what trial.suggest_* checks
        self.seed, self.key = _seed_and_key(seed)
        self.max_queries, self.trials = int(max_queries), []
        if not isinstance(searcher, str):  # a searcher object: its budget is its own
            self.max_queries = int(searcher.options.max_queries)
            searcher_kwargs = {}  # resolve_directions sets num_objectives: the object has it already
        self.pruned = pruned
        if jobs:
            if pruner is not None or pruned != "last_value":
                raise ValueError(f"{searcher!r} decides itself which trainings go on (it promotes): give it no "
                                 "pruner; pruners run with single-fidelity searchers")  # fmt: skip
            self._driver = JobDriver(self, searcher, fidelities, workers, continues, searcher_kwargs)
        else:
            if workers is not None or continues is not None:
                raise ValueError(f"workers= and continues= are a multi-fidelity searcher's; {searcher!r} runs in "
                                 "batches: give batch_size=..., and n_workers= to optimize")  # fmt: skip
            self._driver = BatchDriver(self, searcher, fidelities, pruner, pruned, searcher_kwargs)
        self.kind = self._driver.kind  # which driver the journal's settings rebuild
        self._setup_base(storage, directory, make_pruner(pruner, fidelities) if not jobs else None)

    def _settings(self) -> dict:
        if self.seed is None or self._driver.instance is not None:
            from nas.host.storage import StorageError

            raise StorageError("a study file keeps the seed as an integer and the searcher as its registered name: "
                               "give the Study those (not a PRNG key or a searcher object), or no storage")  # fmt: skip
        return self._driver.settings()

    # -- what the driver holds ----------------------------------------------------------------------
    @property
    def budget_seed(self) -> int:
        """The seed the budget checks (``nas.engine.budget``): the integer seed, 0 for a PRNG key."""
        return 0 if self.seed is None else self.seed

    @property
    def searcher(self):
        """The searcher object the study runs (built on the study's space)."""
        return self._driver.searcher

    @property
    def batch_size(self) -> int:
        """Trials the searcher proposes per step (1 for a multi-fidelity searcher: one job per ask)."""
        return self._driver.batch_size

    @property
    def fidelities(self) -> tuple[float, ...] | None:
        """The budgets trials train to: a multi-fidelity searcher's, or a pruner's (None without)."""
        if isinstance(self._driver, JobDriver):
            return self._driver.fidelities
        return None if self.pruner is None else self.pruner.fidelities

    @property
    def workers(self) -> int | None:
        """How many trainings at once a multi-fidelity searcher is sized for (None for the others)."""
        return self._driver.workers if isinstance(self._driver, JobDriver) else None

    @property
    def continues(self) -> bool | None:
        return self._driver.continues if isinstance(self._driver, JobDriver) else None

    @property
    def spent(self) -> float:
        """Resource dispatched so far: fidelity units for a multi-fidelity searcher (its budget is
        ``max_resource``), else trials asked (the budget is ``max_trials``)."""
        if isinstance(self._driver, JobDriver):
            return float(self._driver.schedule.spent)
        return float(len(self.trials))

    @property
    def max_trials(self) -> int | None:
        """A single-fidelity searcher's budget: the trials it plans for (None for a multi-fidelity one)."""
        return None if isinstance(self._driver, JobDriver) else self.max_queries

    @property
    def max_resource(self) -> float | None:
        """A multi-fidelity searcher's budget: compute in the fidelities' unit, ``max_queries * fidelities[-1]``
        (None for a single-fidelity one)."""
        return self.max_queries * self._driver.fidelities[-1] if isinstance(self._driver, JobDriver) else None

    @property
    def passes_trial(self) -> bool:
        """True: ``optimize`` hands the objective the trial (its params, budget, reports and suggest calls)."""
        return True

    # -- ask -----------------------------------------------------------------------------------------
    def ask(self, n: int | None = None) -> Trial | list[Trial]:
        """One trial, or a list of ``n`` (with batches: at most the trials left in the current batch).

        ``NoTrialNow`` while the searcher waits for results (its batch is out, or a synchronous rung waits:
        the message says which trials to tell); ``BudgetSpent`` once the budget is spent."""
        if n is not None and (isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0):
            raise ValueError(f"ask(n): n must be a non-negative integer, got {n!r}")
        with self._lock:
            self.check_writable()
            return self._driver.ask(n)

    def _ask_replayed(self, record: dict) -> Trial:
        return self._driver.ask_replayed(record)

    def pending(self) -> list[Trial]:
        """Trials handed out and not yet told, in trial order."""
        return [t for t in self.trials if t.state == "pending"]

    # -- tell ----------------------------------------------------------------------------------------
    def tell(self, trial: Trial | int, value=None, cost: float | None = None, *, state: str | None = None) -> None:
        """Records ``value`` for ``trial`` (a Trial or its number) by the class's rule: a number (a list of one
        per direction) is a result; None, NaN or an infinity a failed evaluation (NaN and infinities warn);
        anything else raises. ``cost``: what it spent, in your unit. ``state="pruned"``: the trial was stopped
        (its value: the one given, else its last report); ``state="failed"``: failed whatever the value."""
        with self._lock:
            t = self.get_trial(trial)
            if t.state != "pending":
                raise ValueError(f"trial {t.number} is not pending (state {t.state!r}): each trial is told once")
            if state is not None and state not in STATES_TOLD:
                raise ValueError(f"tell(state=...) must be one of {STATES_TOLD} or None, got {state!r}")
            v = read_values(value, t.number, self.num_objectives)
            c = as_cost(cost, t.number)
            self.check_writable()
            if state == "failed":
                v = None
            elif state == "pruned" and v is None and t.intermediate_values:
                v = t.intermediate_values[max(t.intermediate_values)]
            if v is not None and nonfinite(v):
                end = "recorded as pruned, without a value" if state == "pruned" else "recorded as a failed evaluation"
                warnings.warn(f"trial {t.number}: the objective value is {v}; {end}", stacklevel=2)
                v = None
            self._driver.finish(t, v, state or ("complete" if v is not None else "failed"), c)  # the lock is held

    def _finish(self, trial: Trial, value, state: str, cost) -> None:
        with self._lock:
            self._driver.finish(trial, value, state, cost)

    # -- the loop --------------------------------------------------------------------------------------
    def optimize(
        self,
        fn: Callable[[Any], Any],
        n_trials: int | None = None,
        timeout: float | None = None,
        *,
        n_workers: int | None = None,
        backend=None,
        executor=None,
        batch_size: int | None = None,
        catch: type[Exception] | tuple[type[Exception], ...] = (),
        retries: int = 0,
        trial_timeout: float | None = None,
        show_progress: bool | None = None,
    ) -> Study:
        """Evaluates ``fn`` for ``n_trials`` trials (default: until the budget is spent; 0 = none) or until
        ``timeout`` seconds passed (Optuna's: no trial starts after it, the running ones finish); pending trials
        run first.

        ``fn`` gets the trial (``trial.params``, ``trial.suggest_*``, ``trial.budget``, ``trial.report``,
        ``trial.should_prune``, ``TrialPruned``). Workers
        (``nas.host.workers``): ``n_workers`` at once (default 1), ``backend`` None (in this thread for one
        worker, processes for more), ``"thread"``, ``"process"``, ``"ray"`` or a workers object;
        ``executor`` (a ``concurrent.futures`` executor) runs them as threads over it (``n_workers``: its
        ``max_workers`` unless given). ``catch``: an exception class or a tuple of them, recorded as failed
        evaluations (any other is raised once the running trials are told; its trial stays pending);
        ``retries``: how often a trial whose worker died runs again before it is recorded as failed;
        ``trial_timeout``: seconds a trial may run on process or Ray workers before its worker is killed (and
        replaced) and the trial recorded as failed. SIGTERM stops the workers as SIGINT does.

        ``show_progress`` (``nas.host.progress``): None (default) redraws one line on stderr when it is a
        terminal (trials done, running, pruned, failed, the best value, the elapsed time, and what is
        compiling), and otherwise logs one INFO record per finished trial on the ``nas.host`` logger (shown
        where the script configures logging for INFO, e.g. ``logging.basicConfig(level=logging.INFO)``; a
        level above INFO on that logger turns the terminal line off too); True shows the line, or the plain
        lines on stderr, whatever the logging level; False shows nothing.

        Before the first trial, ``batch_size`` sets a single-fidelity searcher's batch, and ``n_workers`` a
        multi-fidelity searcher's ``workers`` (its state is sized for them, so the study decides as the
        compiled engine with that many workers). The searcher updates on whole batches: give it
        ``batch_size >= n_workers`` to keep every worker busy."""
        a = check_arguments(n_trials, n_workers, catch, retries, timeout, trial_timeout, show_progress)
        n_trials, n_workers = a["n_trials"], a["n_workers"]
        if n_workers is None:
            n_workers = int(getattr(executor, "_max_workers", 1) or 1) if executor is not None else 1
        workers = make_workers(backend, n_workers, executor, trial_timeout=a["trial_timeout"])  # refused: nothing ran
        changed = batch_size is not None and self._driver.set_batch_size(batch_size)
        if self._driver.set_workers(n_workers) or changed:
            self._journal_header(reset=True)  # a journal's settings say what the trials ran with
        left = self._driver.trials_left()
        if left is not None:
            if n_trials is not None and n_trials > left:
                more = "" if self.trials else f"; create the study with max_trials={n_trials} (the trials it plans for)"
                raise ValueError(f"n_trials={n_trials} exceeds the remaining budget ({left} of "
                                 f"{self.budget_name}={self.max_queries}){more}")  # fmt: skip
            n_trials = left if n_trials is None else n_trials
        run_optimize(self, fn, n_trials, workers, a["catch"], a["retries"], timeout=a["timeout"],
                     progress=make_progress(self, show_progress))  # fmt: skip
        return self

    # -- results ----------------------------------------------------------------------------------------
    @property
    def best_trial(self) -> Trial:
        """The best completed trial (ties: the first; a multi-fidelity searcher's: at the top fidelity, ties the
        earlier result). A study with several directions has none: ``best_trials``."""
        return self._driver.best_trial()

    @property
    def best_trials(self) -> list[Trial]:
        """The completed trials on the Pareto front of the directions (one objective: those with the best value;
        a multi-fidelity searcher's: at the top fidelity), in trial order, as Optuna's ``study.best_trials``."""
        return self._driver.best_trials()

    def to_optuna(self, storage=None, study_name: str | None = None):
        """The study's trials as an ``optuna.Study`` (in memory, or in an Optuna ``storage``) that Optuna's plots
        and ``optuna.importance`` take (``nas.adapters.optuna_mirror``: what a trial becomes; ``OptunaMirror``
        mirrors a study live)."""
        from nas.adapters.optuna_mirror import to_optuna

        return to_optuna(self, self._space_arg, self._driver.name, storage=storage, study_name=study_name)


def _seed_and_key(seed) -> tuple[int | None, jax.Array]:
    """``(seed, key)``: an integer seed and ``PRNGKey(seed)``, or ``(None, key)`` for a PRNG key given as is."""
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, (bool, np.bool_)):
        return int(seed), jax.random.PRNGKey(int(seed))
    key = np.asarray(seed) if not isinstance(seed, jax.Array) else seed
    if getattr(key, "dtype", None) == np.uint32 and getattr(key, "shape", None) == (2,):
        return None, jnp.asarray(key)
    raise TypeError(f"seed must be an integer or a JAX PRNG key (jax.random.PRNGKey(n)), got {seed!r:.60}")


def _check_arguments(searcher, fidelities, workers, continues):
    """One line naming a Study argument of the wrong kind, before anything is built; ``(fidelities, workers)``."""
    if not isinstance(searcher, str) and not (hasattr(searcher, "options") and hasattr(searcher, "space")):
        raise TypeError(f"searcher must be a registered name (nas.available_searchers()) or a searcher object built "
                        f"on the space (nas.make_searcher(...)), got {searcher!r:.60}")  # fmt: skip
    if fidelities is not None:
        if isinstance(fidelities, (str, bytes)) or not hasattr(fidelities, "__len__"):
            raise TypeError(f"fidelities must be a list of budgets (epochs, iterations), e.g. [1, 3, 9, 27], got "
                            f"{fidelities!r:.60}")  # fmt: skip
        fidelities = list(fidelities)
        bad = [f for f in fidelities if isinstance(f, (bool, np.bool_)) or not isinstance(f, (int, float, np.integer,
               np.floating)) or not np.isfinite(f) or f <= 0]  # fmt: skip
        if bad or not fidelities:
            raise ValueError(f"fidelities must be positive finite numbers (budgets: epochs, iterations), e.g. "
                             f"[1, 3, 9, 27], got {fidelities!r:.60}")  # fmt: skip
        if any(b <= a for a, b in zip(fidelities, fidelities[1:], strict=False)):
            raise ValueError(f"fidelities must increase (the budgets in order), got {fidelities!r:.60}")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 1):
        raise ValueError(f"workers must be a positive integer (trainings at once) or None, got {workers!r}")
    if continues is not None and not isinstance(continues, (bool, np.bool_)):
        raise TypeError(f"continues must be True (a promotion resumes its parent's checkpoint), False or None, got "
                        f"{continues!r}")  # fmt: skip
    return fidelities, None if workers is None else int(workers)


NO_SPACE = ("create_study needs the search space: nasjax's searchers are compiled for a space declared when the "
            "study is created (define-and-run), e.g. nas.create_study({'lr': nas.Float(1e-4, 1, log=True), "
            "'layers': nas.Int(1, 4)}, searcher='random_search'); the objective then reads "
            "trial.suggest_float('lr', 1e-4, 1, log=True) or trial.params['lr']")  # fmt: skip

def create_study(space: Space | dict[str, Any] | None = None, searcher: str = "regularized_evolution",
                 **kwargs) -> Study:  # fmt: skip
    """A new ``Study`` (Optuna's name): ``create_study(space, searcher=..., direction=..., seed=...,
    max_trials=... | max_resource=..., storage=..., **searcher_options)``; the arguments are ``Study``'s.
    The space is required (define-and-run): without one, one line says how to declare it."""
    if space is None:
        raise TypeError(NO_SPACE)
    return Study(space, searcher, **kwargs)


def load_study(storage, directory: str | None = None, *, read_only: bool = False) -> Study:
    """The study kept in ``storage`` (a journal path or ``sqlite:///path.db``), replayed and continued where it
    stopped (``nas.host.study_base``); ``read_only=True``: loaded for reading only."""
    return Study.load(storage, directory=directory, read_only=read_only)


def __getattr__(name: str):
    if name == "MultiFidelityStudy":  # 0.2's second class: now the one Study, with the job driver inside
        warnings.warn("MultiFidelityStudy is now nas.host.study.Study (one class; a multi-fidelity searcher runs "
                      "as its job driver)", DeprecationWarning, stacklevel=2)  # fmt: skip
        return Study
    raise AttributeError(f"module 'nas.host.study' has no attribute {name!r}")
