"""The multi-fidelity searcher contract: one job at a time, each at a fidelity of the objective.

A multi-fidelity searcher (successive halving, Hyperband, BOHB, ASHA, ...) decides which
configuration to evaluate *and at which budget*, and it decides as results arrive, one by one::

    state = searcher.init(key)
    job, state = searcher.ask(key, state)               # Job: tokens int32[N], fidelity, parent, ok
    state, metrics = searcher.tell(key, job, score, state)

``job.fidelity`` indexes the objective's ``fidelities`` (``spaces.benchmarks.objective``);
``job.parent`` is the fidelity index of an earlier evaluation of the same configuration that this
one continues (a promotion), or ``-1`` for a fresh training: on an objective that ``continues``,
the promotion pays only the difference of the budgets. ``job.ok`` False means the searcher has no
job to give now (every candidate waits for a result still running, e.g. at a synchronous rung of
successive halving); the worker waits for the next result. ``score`` is the evaluation's validation
score (higher is better, ``-inf`` for a failed evaluation).

The engine (``nas.engine.multi_fidelity_runner``) runs ``workers`` evaluations at once on a simulated
clock, each busy for its evaluation's ``cost``, and tells the searcher each result when its
evaluation finishes (Syne Tune's simulator backend, inside one compiled program); with one worker
the run is sequential. The budget is compute: ``max_queries`` full evaluations, i.e. the run
dispatches evaluations while the resource spent (``fidelities`` budgets, or their differences for
promotions that continue) is below ``max_queries * fidelities[-1]``.

**The base keeps the shared part of ``tell``** (evosax's ``tell``/``_tell``): a searcher writes its update as
``_tell``, which ``tell`` calls with a NaN score read as a failed evaluation (``-inf``, every objective of a
vector). Its never-re-query set is its own: a multi-fidelity searcher adds a configuration to ``seen`` when
it starts it (at ``ask``), since a promotion queries a configuration again at a higher fidelity.

The engine asks and tells under a per-seed condition (an idle worker, a finished evaluation):
``ask_if(key, state, pred)`` and ``tell_if(key, job, score, state, pred)`` leave the state unchanged
where ``pred`` is False. Their default selects between the new and the old state, a pass over the whole
state; a searcher whose ask and tell write a few entries of a large state masks those writes instead
(ASHA), so a step costs no pass over what it does not touch.

Options are the searcher's identity, as for every searcher (``nas.core.options``); ``fidelities``
are the objective's budgets, filled in from the objective by the experiment layer, so that the
searcher's brackets and rungs are static shapes.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
from flax import struct

from nas.core.contract import Searcher
from nas.core.options import OptionError, SearcherOptions, positive


@struct.dataclass
class Job:
    """One evaluation a searcher asks for (fields as in the module docstring; a leading axis when batched)."""

    tokens: jax.Array  # int32[N]
    fidelity: jax.Array  # int32[]: index into the fidelities
    parent: jax.Array  # int32[]: fidelity index this evaluation continues from, -1 = a fresh training
    ok: jax.Array  # bool[]: False = no job now

    @staticmethod
    def make(tokens, fidelity, parent=-1, ok=True) -> Job:
        return Job(
            tokens=jnp.asarray(tokens, jnp.int32),
            fidelity=jnp.asarray(fidelity, jnp.int32),
            parent=jnp.asarray(parent, jnp.int32),
            ok=jnp.asarray(ok, bool),
        )


@dataclasses.dataclass(frozen=True)
class MultiFidelityOptions(SearcherOptions):
    """Options every multi-fidelity searcher has.

    Attributes:
      max_queries: the compute budget in full evaluations (``max_queries * fidelities[-1]`` resource).
      batch_size: 1 (one job per ask; parallelism comes from ``workers``).
      fidelities: the objective's budgets, increasing (filled in from the objective by the experiment;
        empty in a config, which lists the searcher before the benchmark is loaded).
      workers: W, evaluations running at once on the simulated clock (1 = sequential).
    """

    fidelities: tuple = ()
    workers: int = 1

    def __post_init__(self):
        try:
            budgets = tuple(float(b) for b in self.fidelities)
        except (TypeError, ValueError):
            raise OptionError(f"option fidelities must be increasing budgets, got {self.fidelities!r}") from None
        object.__setattr__(self, "fidelities", budgets)
        super().__post_init__()

    def check(self) -> None:
        super().check()
        positive(self, "workers")
        if self.batch_size != 1:
            raise ValueError(f"a multi-fidelity searcher asks one job at a time: batch_size must be 1, got "
                             f"{self.batch_size} (run evaluations in parallel with workers=W)")  # fmt: skip
        b = self.fidelities  # () until the experiment fills in the objective's (a config lists it before)
        if not all(math.isfinite(x) and x > 0 for x in b) or any(x >= y for x, y in zip(b, b[1:])):
            raise ValueError(f"fidelities must be finite, positive and increasing, got {b}")


class MultiFidelitySearcher(Searcher):
    """Base class: ``init``, ``ask(key, state) -> (Job, state)``, ``tell(key, job, score, state)``; a searcher
    writes ``_tell(key, job, score, state)``, told a failed evaluation as ``-inf`` (``failed_as_neg_inf``)."""

    Options: ClassVar[type[SearcherOptions]] = MultiFidelityOptions
    multi_fidelity: ClassVar[bool] = True

    def setup(self) -> None:
        if not self.budgets:
            raise ValueError("fidelities is empty: give the objective's budgets (the experiment fills them in)")

    # -- static sizes the engine and the searchers share ------------------------------------------
    @property
    def budgets(self) -> tuple[float, ...]:
        return self.options.fidelities

    @property
    def num_fidelities(self) -> int:
        return len(self.budgets)

    @property
    def workers(self) -> int:
        return self.options.workers

    @property
    def max_resource(self) -> float:
        """The run's compute budget in the objective's fidelity unit."""
        return float(self.max_queries) * self.budgets[-1]

    @property
    def min_charge(self) -> float:
        """The least resource one evaluation can be charged: the lowest budget, or a promotion's difference."""
        b = self.budgets
        return min([b[0]] + [y - x for x, y in zip(b, b[1:])])

    @property
    def max_evaluations(self) -> int:
        """A bound on the evaluations of one run: dispatch stops once the budget is spent, plus the
        ``workers`` evaluations that may be running then."""
        return int(math.ceil(self.max_resource / self.min_charge)) + self.workers

    @property
    def num_steps(self) -> int:
        """Engine steps: one per finished evaluation."""
        return self.max_evaluations

    # -- the contract ----------------------------------------------------------------------------
    def ask(self, key: jax.Array, state: Any) -> tuple[Job, Any]:
        raise NotImplementedError

    def tell(self, key: jax.Array, job: Job, score: jax.Array, state: Any) -> tuple[Any, dict]:
        """The searcher's update (``_tell``), told a NaN score as a failed evaluation (``-inf``)."""
        return self._tell(key, job, failed_as_neg_inf(score), state)

    def _tell(self, key: jax.Array, job: Job, score: jax.Array, state: Any) -> tuple[Any, dict]:
        """The searcher's update from one finished evaluation: ``(state, metrics)``; ``score`` has no NaN."""
        raise NotImplementedError

    def ask_if(self, key: jax.Array, state: Any, pred: jax.Array) -> tuple[Job, Any]:
        """``ask`` where ``pred``, else ``state`` unchanged (the job is then not taken)."""
        job, new = self.ask(key, state)
        return job, jax.tree.map(lambda a, b: jnp.where(pred, a, b), new, state)

    def tell_if(self, key: jax.Array, job: Job, score: jax.Array, state: Any, pred: jax.Array) -> tuple[Any, dict]:
        """``tell`` where ``pred``, else ``state`` unchanged (the metrics are ``tell``'s either way)."""
        new, metrics = self.tell(key, job, score, state)
        return jax.tree.map(lambda a, b: jnp.where(pred, a, b), new, state), metrics


def failed_as_neg_inf(score: jax.Array) -> jax.Array:
    """``score`` with a NaN (an evaluation that failed) as ``-inf``, elementwise."""
    return jnp.where(jnp.isnan(score), -jnp.inf, score)


def is_multi_fidelity(searcher) -> bool:
    return bool(getattr(searcher, "multi_fidelity", False))
