"""Syne Tune's ASHA and asynchronous Hyperband as a multi-fidelity peer, in Syne Tune's own simulator.

The peer ``syne_tune`` runs Syne Tune's schedulers (Salinas et al., 2022, "Syne Tune: A Library for
Large Scale Hyperparameter Tuning and Reproducible Research"; version 0.16) on any objective with
fidelities (``spaces.benchmarks.objective``), seed by seed on the host, and returns the
``nas.engine.multi_fidelity_runner.MFHistory`` of our multi-fidelity searchers, so the reports read
it beside them:

- ``scheduler="asha"``: ``syne_tune.optimizer.baselines.ASHA`` (Li et al., 2020, "A System for
  Massively Parallel Hyperparameter Tuning", the stopping variant of Ray Tune and Syne Tune):
  a trial reports at every fidelity; at rung ``r eta^k`` it continues iff it ranks in the top
  ``1/eta`` of the results recorded at that rung so far, else it stops. Our ``asha`` is the
  promotion variant (the paper's Algorithm 2: a free worker promotes a waiting configuration).
- ``scheduler="hyperband"``: the same with ``brackets`` rung ladders (Syne Tune's asynchronous
  Hyperband; a trial's bracket drawn with probability proportional to ``exp(number of rungs)``).

Rungs: ``grace_period`` = the lowest fidelity, ``max_t`` = the top one, ``reduction_factor`` = ``eta``
(what a Syne Tune user writes): rungs at ``lowest * eta^k`` below the top; a trial decides at the
first fidelity at or above each rung. Hyperband gets as many brackets as that ladder has rungs.

The simulator: Syne Tune's ``Tuner`` drives a ``UserBlackboxBackend`` (its simulator backend: an
event heap on a simulated clock, ``n_workers`` = ``workers``) over a ``Blackbox`` that reads our
objective, all fidelities at once per trial (``objective.query`` at every fidelity index, so the
numbers are the table's, bit for bit). Three settings make the clock the tabulated costs and runs
reproducible: no simulated delays, a time keeper that does not add the host's real computing time
(Syne Tune's adds it), and the tuner's sleep jumping to the next event instead of a fixed step. What
remains of Syne Tune's clock: stopping a trial moves it 2 ms forward (hard-coded in its simulator),
and an evaluation takes at least 0.01 s. A configuration outside the table is a failed evaluation
(``valid = -inf``, cost 0).

Charges, budget and history as in our engine (``nas.engine.multi_fidelity_runner``): a trial reports
each fidelity in turn, each report one history row in the order results arrive; the report at
fidelity ``f > 0`` is an evaluation that continues the one at ``f - 1``: on an objective that
``continues`` it spends the budgets' difference and that fraction of its cost, otherwise (separate
trainings, e.g. NAS-Bench-201) its full budget and cost; the simulated elapsed time of a trial is
the sum of those costs. Dispatch (a new trial at the lowest fidelity, or a trial continuing to the
next) happens while the resource spent is below ``max_queries * fidelities[-1]``; once it is not,
no trial starts and every trial stops at its next report. Syne Tune's random searcher samples with
replacement: a configuration may be evaluated twice at a fidelity (counted in the metrics).

Keys: seed ``s`` (key ``k_s``) seeds Syne Tune (``random_seed``, and NumPy's global generator that
its domains and bracket draws use, restored afterwards) from ``fold_in(k_s, INIT_FOLD)``; trial ``i``
is queried with ``fold_in(k_s, i)`` (an objective that continues: ``fold_in(k_s, QUERY_FOLD)``, one
training seed per run as in the engine). Syne Tune is optional: ``pip install --no-deps
syne-tune==0.16.0`` (its own requirements pull xgboost and CUDA
libraries, which the simulator never imports; requirements-dev.txt lists what it does import).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import io
import logging
import math
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np

from nas.core.multi_fidelity import MultiFidelityOptions, MultiFidelitySearcher
from nas.core.options import one_of
from nas.engine.multi_fidelity_runner import QUERY_FOLD
from nas.engine.runner import INIT_FOLD
from nas.experiment.peer_base import Peer, register_peer
from spaces.files import MissingPackageError

INSTALL_HINT = (
    "the 'syne_tune' peer needs Syne Tune, an optional dependency: pip install dill sortedcontainers "
    "huggingface_hub && pip install --no-deps syne-tune==0.16.0 (see requirements-dev.txt)"
)


DELEGATED = ("on_trial_add", "on_trial_complete", "on_trial_remove", "on_trial_error", "metric_names", "metric_mode",
             "metadata")  # fmt: skip


@dataclasses.dataclass(frozen=True)
class SyneTuneOptions(MultiFidelityOptions):
    """Attributes (and ``MultiFidelityOptions``' max_queries, fidelities, workers):
    scheduler: ``asha`` or ``hyperband`` (Syne Tune's ASHA with one bracket, or with one per rung).
    eta: the reduction factor (``reduction_factor``): the top 1/eta of a rung continues (3).
    seeds_per_group: seeds run, then checkpointed, together (0 = all at once).
    """

    scheduler: str = "asha"
    eta: float = 3.0
    seeds_per_group: int = 10

    def check(self):
        super().check()
        one_of(self, "scheduler", ("asha", "hyperband"))
        if not self.eta > 1.0:
            raise ValueError(f"eta must be > 1 (1/eta of each rung continues), got {self.eta}")
        if self.seeds_per_group < 0:
            raise ValueError(f"seeds_per_group must be >= 0, got {self.seeds_per_group}")


def import_syne_tune():
    try:
        import syne_tune  # noqa: F401
        from syne_tune.blackbox_repository.simulated_tabular_backend import UserBlackboxBackend  # noqa: F401
    except ImportError as e:
        raise MissingPackageError(INSTALL_HINT) from e
    logging.getLogger("syne_tune").setLevel(logging.ERROR)


def num_rungs(budgets, eta: float) -> int:
    """Rungs of Syne Tune's ladder ``lowest * eta^k`` below the top fidelity (``asha.Bracket``, s = 0)."""
    return max(1, int(math.log(budgets[-1] / budgets[0]) / math.log(eta) + 1))


def charges(budgets, continues: bool) -> np.ndarray:
    """f64[F]: resource of the report at each fidelity, each continuing the one below (module docstring)."""
    b = np.asarray(budgets, np.float64)
    return np.diff(b, prepend=0.0) if continues else b


class SyneTuneRun:
    """One seed: Syne Tune's Tuner on the simulator, with our budget rule; ``run()`` -> history rows."""

    def __init__(self, space, options: SyneTuneOptions, objective, key: jax.Array, query):
        from syne_tune.backend.simulator_backend.simulator_backend import SimulatorConfig
        from syne_tune.backend.simulator_backend.time_keeper import SimulatedTimeKeeper
        from syne_tune.blackbox_repository.blackbox import Blackbox
        from syne_tune.blackbox_repository.simulated_tabular_backend import UserBlackboxBackend
        from syne_tune.config_space import choice, randint

        self.space, self.options, self.key, self.query = space, options, key, query
        self.budgets = tuple(options.fidelities)
        self.continues = bool(getattr(objective, "continues", False))
        self.charge = charges(self.budgets, self.continues)
        self.max_resource = options.max_queries * self.budgets[-1]
        self.names = [f"t{i}" for i in range(space.num_tokens)]
        run = self

        class ObjectiveBlackbox(Blackbox):
            """Our objective at every fidelity; columns valid, test, cost, elapsed (cumulative charged time)."""

            def __init__(self):
                super().__init__(
                    configuration_space={n: choice(list(range(c))) for n, c in zip(run.names, space.cardinalities)},
                    fidelity_space={"fidelity": randint(1, int(math.ceil(run.budgets[-1])))},
                    objectives_names=["valid", "test", "cost", "elapsed"],
                )
                self.trials = 0

            @property
            def fidelity_values(self):
                return np.asarray(run.budgets)

            def _objective_function(self, configuration, fidelity=None, seed=None):
                self.trials += 1
                return run.evaluate([configuration[n] for n in run.names], self.trials - 1)

        class ExactClock(SimulatedTimeKeeper):
            """Syne Tune's simulated clock without the host's real computing time (exact, reproducible)."""

            def real_time_since_last_recent_exit(self) -> float:
                return 0.0

        self.backend = UserBlackboxBackend(
            blackbox=ObjectiveBlackbox(), elapsed_time_attr="elapsed", seed=0,
            simulator_config=SimulatorConfig(0.0, 0.0, 0.0, 0.0, 0.0),
        )  # fmt: skip
        self.backend._time_keeper = ExactClock()
        self.rows: list[tuple] = []
        self.spent = 0.0

    def evaluate(self, tokens: list, trial: int) -> np.ndarray:
        """f64[F, 4]: (valid, test, cost of the continued part, elapsed) at every fidelity of one trial."""
        f = len(self.budgets)
        k = jax.random.fold_in(self.key, QUERY_FOLD if self.continues else trial)
        toks = jnp.asarray(np.tile(np.asarray(tokens, np.int32), (f, 1)))
        res = jax.tree.map(np.asarray, self.query(k, toks, jnp.arange(f, dtype=jnp.int32)))
        cost = res["cost"]  # f32, as the engine computes it
        if self.continues:  # a continued training takes its part of the time
            cost = cost * self.charge.astype(np.float32) / np.asarray(self.budgets, np.float32)
        valid = np.where(np.isnan(res["valid"]), -np.inf, res["valid"]).astype(np.float64)
        return np.stack([valid, res["test"], cost, np.cumsum(cost, dtype=np.float64)], axis=1)

    def scheduler(self, seed: int):
        from syne_tune.optimizer.baselines import ASHA

        o, b = self.options, self.budgets
        brackets = num_rungs(b, o.eta) if o.scheduler == "hyperband" else 1
        return ASHA(
            dict(self.backend.blackbox.configuration_space), metric="valid",
            time_attr="fidelity", max_t=b[-1], grace_period=b[0], reduction_factor=o.eta,
            brackets=brackets, do_minimize=False, random_seed=seed,
        )  # fmt: skip

    def run(self, seed: int) -> list[tuple]:
        from syne_tune import Tuner
        from syne_tune.backend.simulator_backend.simulator_callback import SimulatorCallback
        from syne_tune.optimizer.scheduler import SchedulerDecision, TrialScheduler
        from syne_tune.tuner_logger import TunerLogger

        run, inner = self, self.scheduler(seed)
        fidelity_of = {float(v): i for i, v in enumerate(self.budgets)}

        class Budgeted(TrialScheduler):
            """Syne Tune's scheduler, dispatching only while the budget lasts; records every report."""

            def __init__(self):
                super().__init__(random_seed=seed)

            def suggest(self):
                if run.spent >= run.max_resource:
                    return None  # the Tuner stops starting trials and waits for the running ones
                s = inner.suggest()
                run.spent += float(run.charge[0]) if s is not None else 0.0
                return s

            def on_trial_result(self, trial, result):
                f = fidelity_of[float(result["fidelity"])]
                tokens = [trial.config[n] for n in run.names]
                run.rows.append((tokens, f, result["valid"], result["test"], result["cost"], run.charge[f],
                                 result["st_tuner_time"]))  # fmt: skip
                decision = inner.on_trial_result(trial, result)
                if decision == SchedulerDecision.CONTINUE and f + 1 < len(run.budgets):
                    if run.spent >= run.max_resource:
                        return SchedulerDecision.STOP
                    run.spent += float(run.charge[f + 1])
                return decision

        for method in DELEGATED:  # the rest of the scheduler is Syne Tune's, unchanged
            setattr(Budgeted, method, lambda self, *a, _m=method, **kw: getattr(inner, _m)(*a, **kw))

        class EventClock(SimulatorCallback):
            """The tuner's sleep moves the clock to the next event (Syne Tune's moves a fixed step)."""

            def on_tuning_sleep(self, sleep_time):
                heap = run.backend._simulator_state.event_heap
                if heap:
                    self._time_keeper.advance_to(heap[0][0])

        class Quiet(TunerLogger):
            def __getattribute__(self, name):
                return (lambda *a, **k: None) if name.startswith("print_") else super().__getattribute__(name)

        quiet = contextlib.redirect_stdout(io.StringIO())  # the tuner's closing summary
        with tempfile.TemporaryDirectory() as d, _env("SYNETUNE_FOLDER", d), _numpy_seed(seed), quiet:
            tuner = Tuner(
                trial_backend=self.backend, scheduler=Budgeted(), stop_criterion=lambda status: False,
                n_workers=self.options.workers, sleep_time=0, callbacks=[EventClock()], save_tuner=False,
                tuner_name="nasjax-peer", suffix_tuner_name=False, output_logger=Quiet(),
                print_update_interval=1e9, results_update_interval=1e9,
            )  # fmt: skip
            tuner.run()
        return self.rows


@contextlib.contextmanager
def _env(name: str, value: str):
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


@contextlib.contextmanager
def _numpy_seed(seed: int):
    """Syne Tune draws from NumPy's global generator: seed it for the run, restore it afterwards."""
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(state)


@jax.jit
def fidelity_query(objective, key: jax.Array, tokens: jax.Array, fidelity: jax.Array) -> dict:
    """``objective.query`` at per-row fidelities, compiled once per objective structure (the table an argument)."""
    return objective.query(key, tokens, fidelity)


def empty_history(space, options: SyneTuneOptions, seeds: int) -> dict[str, np.ndarray]:
    """Host arrays of ``MFHistory``'s fields, ``[seeds, E, ...]``; E is our engine's ``max_evaluations``."""
    e = MultiFidelitySearcher(space, options).max_evaluations  # the sizes our searchers get for these options
    return {
        "tokens": np.zeros((seeds, e, space.num_tokens), np.int32),
        "fidelity": np.full((seeds, e), -1, np.int32),
        "score": np.full((seeds, e), -np.inf, np.float32),
        "report_score": np.full((seeds, e), -np.inf, np.float32),
        **{k: np.zeros((seeds, e), np.float32) for k in ("cost", "resource", "finish")},
    }


FIELDS = ("fidelity", "score", "report_score", "cost", "resource", "finish")  # a row's fields after its tokens


def run_group(space, options: SyneTuneOptions, keys: jax.Array, objective) -> tuple[dict, dict]:
    """One Syne Tune run per key, in turn: ``MFHistory`` arrays ``[G, E, ...]`` and mean metrics."""
    out = empty_history(space, options, keys.shape[0])
    query = functools.partial(fidelity_query, objective)
    repeats, trials = [], []
    for s, key in enumerate(keys):
        seed = int(jax.random.randint(jax.random.fold_in(key, INIT_FOLD), (), 0, np.iinfo(np.int32).max))
        run = SyneTuneRun(space, options, objective, key, query)
        rows = run.run(seed)
        if len(rows) > out["score"].shape[1]:
            raise RuntimeError(f"syne_tune: {len(rows)} evaluations, more than the budget allows "
                               f"({out['score'].shape[1]}); the budget rule was broken")  # fmt: skip
        for t, (tokens, f, valid, test, cost, resource, finish) in enumerate(rows):
            out["tokens"][s, t] = tokens
            for name, v in zip(FIELDS, (f, valid, test, cost, resource, finish)):
                out[name][s, t] = v
        pairs = [(tuple(r[0]), r[1]) for r in rows]
        repeats.append(len(pairs) - len(set(pairs)))
        trials.append(run.backend.blackbox.trials)
    return out, {"repeats": float(np.mean(repeats)), "trials": float(np.mean(trials))}


@register_peer("syne_tune")
class SyneTunePeer(Peer):
    """Syne Tune's ASHA or asynchronous Hyperband in its simulator: a multi-fidelity peer (``run_group``
    runs a group of seeds; ``SyneTuneRun`` is one seed's run, not a proposer)."""

    Options = SyneTuneOptions
    Proposer = SyneTuneRun
    multi_fidelity = True
    installed = staticmethod(import_syne_tune)

    @classmethod
    def repeats_reason(cls, options: dict) -> str:
        return "Syne Tune's random searcher samples with replacement"
