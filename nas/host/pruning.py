"""Pruning in place: ASHA's stopping rule and Hyperband's brackets decide whether a running training stops.

For trainings that run to the top budget unless stopped, the training reports its validation value as
it goes (``trial.report(value, step)``) and asks ``trial.should_prune()`` (Optuna's pruners, Ray Tune's
``ASHAScheduler``). The deciders:

- ``ASHAPruner``, the stopping rule of asynchronous successive halving (Li et al., 2020, "A System for
  Massively Parallel Hyperparameter Tuning", Algorithm 2, as Optuna's ``SuccessiveHalvingPruner`` runs
  it in place): when a trial's reported step first reaches rung ``k``'s budget, its latest value is
  recorded at rung ``k``, and the trial goes on only if it is in the top ``1/eta`` of the values recorded
  at rung ``k`` so far, itself included: fewer than ``q = max(1, floor(n / eta))`` of the ``n`` values
  are better than its own (ties go on; with fewer than ``eta`` values only the best goes on, as in
  Optuna, since a trial cannot wait for later ones). A report that passes several rungs at once records
  the value at each, in order, up to the first rung it fails. A non-finite value stops the trial.
- ``HyperbandPruner`` (Li et al., 2018, JMLR, Algorithm 2, as Optuna's ``HyperbandPruner``): each trial
  is assigned to one of Hyperband's brackets and competes only with the trials of its bracket, at that
  bracket's rungs; trials are assigned in turn, each bracket as many as it starts configurations in
  the paper's schedule (its ``n_0``), so the brackets fill in the proportions of one Hyperband cycle.

The rungs are the compiled searchers' own: the ladder of ``asha`` (with ``eta``, ``min_budget``,
``max_budget``, ``early_stopping_rate``) and the brackets of ``hyperband``, built on the offered
``fidelities`` (``nas.core.ladders``); no decision is taken at the top budget. Decisions are pure
jitted functions over fixed-size rung arrays (``record_and_decide``: no ranking loop); the trials axis
grows in powers of two, so a study compiles one program per size. Values are scores, higher is better:
the study negates minimized values.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from spaces.base import CategoricalSpace

_UNIT_SPACE = CategoricalSpace("pruner_rungs", {"x": [0, 1]})  # the searchers' rungs need no space of ours


@struct.dataclass
class Rungs:
    """Values recorded at the rungs: rung ``k`` of trial ``c`` (its number)."""

    value: jax.Array  # f32[K, C]: the score recorded (higher is better)
    has: jax.Array  # bool[K, C]: a value is recorded
    group: jax.Array  # int32[C]: the trial's bracket (trials compete within one); -1: no such trial yet


def rungs_init(num_rungs: int, capacity: int) -> Rungs:
    return Rungs(
        value=jnp.full((num_rungs, capacity), -jnp.inf, jnp.float32),
        has=jnp.zeros((num_rungs, capacity), bool),
        group=jnp.full((capacity,), -1, jnp.int32),
    )


def record_and_decide(rungs: Rungs, budgets, trial, group, step, score, eta) -> tuple[Rungs, jax.Array]:
    """Records trial ``trial``'s ``score`` at ``step`` and says whether it stops (the module's rule).

    ``budgets`` (f32[K]): each rung's budget for this trial's bracket, ``inf`` where it has no decision.
    Rung ``k`` is passed when ``step >= budgets[k]`` and the trial has no value there yet. Among the others of
    ``group`` with a value at rung ``k``, ``better`` count above ``score``; the trial fails the rung when
    ``better >= max(1, floor((others + 1) / eta))`` or ``score`` is not finite. It stops when it fails a
    passed rung; its score is recorded at each passed rung up to the first failed one (none when not finite)."""
    k = jnp.arange(rungs.value.shape[0])
    mine = rungs.has[:, trial]
    passed = (budgets <= step) & ~mine
    finite = jnp.isfinite(score)
    others = rungs.has & (rungs.group == group)[None, :] & (jnp.arange(rungs.has.shape[1]) != trial)[None, :]
    n = jnp.sum(others, axis=1) + 1
    better = jnp.sum(others & (rungs.value > score), axis=1)
    quota = jnp.maximum(1, jnp.floor(n / eta + 1e-9).astype(jnp.int32))
    fails = passed & ((better >= quota) | ~finite)
    first_fail = jnp.where(jnp.any(fails), jnp.argmax(fails), k.shape[0])
    record = passed & finite & (k <= first_fail)
    rungs = rungs.replace(
        value=rungs.value.at[:, trial].set(jnp.where(record, score, rungs.value[:, trial])),
        has=rungs.has.at[:, trial].set(mine | record),
        group=rungs.group.at[trial].set(group),
    )
    return rungs, jnp.any(fails)


_decide = jax.jit(record_and_decide)


def _grown(rungs: Rungs, capacity: int) -> Rungs:
    pad = capacity - rungs.group.shape[0]
    return Rungs(
        value=jnp.pad(rungs.value, ((0, 0), (0, pad)), constant_values=-jnp.inf),
        has=jnp.pad(rungs.has, ((0, 0), (0, pad))),
        group=jnp.pad(rungs.group, (0, pad), constant_values=-1),
    )


class Pruner:
    """Host side of a decider: the rung arrays and each trial's rungs; ``report`` records and decides."""

    name = ""
    searcher = ""  # the compiled searcher whose rungs this pruner uses

    def __init__(self, fidelities, eta: float = 3.0, min_budget: float = 0.0, max_budget: float = 0.0, **options):
        from nas.searchers import make_searcher  # the registry, only when a pruner is built

        if not fidelities:
            raise ValueError(f"a {self.name} pruner needs fidelities: the budgets (steps, epochs) its rungs may sit at")
        options = dict(eta=eta, min_budget=min_budget, max_budget=max_budget, **options)
        self.rules = make_searcher(self.searcher, _UNIT_SPACE, fidelities=tuple(fidelities), max_queries=1, **options)
        self.options = options
        self.fidelities = self.rules.budgets
        self.eta = float(getattr(self.rules, "eta", self.rules.options.eta))
        self.ladder = tuple(self.rules.ladder)
        self.rungs = rungs_init(max(len(self.ladder) - 1, 1), 16)

    def spec(self) -> dict:
        """What rebuilds this pruner (a study's journal stores it)."""
        return {"pruner": self.name, "fidelities": list(self.fidelities), **self.options}

    def group(self, number: int) -> int:
        return 0

    def rung_budgets(self, number: int) -> np.ndarray:
        """f32[K]: the budget of each ladder rung below the top where trial ``number`` is decided (inf: not)."""
        return np.asarray([self.fidelities[f] for f in self.ladder[:-1]] or [np.inf], np.float32)

    def schedule(self) -> str:
        return self.rules.schedule()

    def decide(self, number: int, step: float, score: float) -> tuple[Rungs, bool]:
        """The rungs after recording trial ``number``'s ``score`` (higher is better) at ``step``, and whether the
        trial stops; the pruner itself is unchanged until ``commit`` (a study writes the decision first)."""
        rungs = self.rungs
        if number >= rungs.group.shape[0]:
            rungs = _grown(rungs, 1 << int(number).bit_length())
        rungs, prune = _decide(
            rungs, jnp.asarray(self.rung_budgets(number)), jnp.int32(number), jnp.int32(self.group(number)),
            jnp.float32(step), jnp.float32(score), jnp.float32(self.eta),
        )  # fmt: skip
        return rungs, bool(prune)

    def commit(self, rungs: Rungs) -> None:
        """Keeps the rungs ``decide`` returned."""
        self.rungs = rungs

    def report(self, number: int, step: float, score: float) -> bool:
        """Records trial ``number``'s ``score`` (higher is better) at ``step``; True: the trial stops."""
        rungs, prune = self.decide(number, step, score)
        self.commit(rungs)
        return prune


class ASHAPruner(Pruner):
    """ASHA's stopping rule on the rungs of the ``asha`` searcher (module docstring); options as ``asha``'s:
    ``eta``, ``min_budget``, ``max_budget`` (fidelities; 0 = the lowest / the top), ``early_stopping_rate``."""

    name = "asha"
    searcher = "asha"


class HyperbandPruner(Pruner):
    """Hyperband's brackets of the ``hyperband`` searcher, each run with ASHA's rule in place (module docstring)."""

    name = "hyperband"
    searcher = "hyperband"

    def __init__(self, fidelities, eta: float = 3.0, min_budget: float = 0.0, max_budget: float = 0.0, **options):
        super().__init__(fidelities, eta, min_budget, max_budget, **options)
        brackets = self.rules.schedule_brackets
        self.starts = [b[0][1] for b in brackets]  # n_0: configurations each bracket starts
        position = {f: i for i, f in enumerate(self.ladder)}
        table = np.full((len(brackets), self.rungs.value.shape[0]), np.inf, np.float32)
        for j, b in enumerate(brackets):
            for f, _ in b[:-1]:  # the bracket's rungs below its top
                table[j, position[f]] = self.fidelities[f]
        self.bracket_budgets = table

    def group(self, number: int) -> int:
        """The bracket of trial ``number``: in each cycle of ``sum(n_0)`` trials, bracket j takes ``n_0[j]`` in turn."""
        p = int(number) % sum(self.starts)
        return int(np.searchsorted(np.cumsum(self.starts), p, side="right"))

    def rung_budgets(self, number: int) -> np.ndarray:
        return self.bracket_budgets[self.group(number)]


PRUNERS = {"asha": ASHAPruner, "hyperband": HyperbandPruner}


def make_pruner(pruner, fidelities) -> Pruner | None:
    """A ``Pruner`` as is; ``"asha"`` / ``"hyperband"`` on ``fidelities``; a spec dict (``Pruner.spec``); or None."""
    if pruner is None or isinstance(pruner, Pruner):
        return pruner
    if isinstance(pruner, dict):
        spec = dict(pruner)
        return PRUNERS[spec.pop("pruner")](**spec)
    if pruner not in PRUNERS:
        raise ValueError(f"unknown pruner {pruner!r}: choose one of {sorted(PRUNERS)} or give a Pruner object")
    if not fidelities:
        raise ValueError(f"pruner={pruner!r} needs fidelities=[...]: the budgets at which trials report "
                         "(e.g. epochs [1, 3, 9, 27]); its rungs sit at some of them")  # fmt: skip
    return PRUNERS[pruner](fidelities)

