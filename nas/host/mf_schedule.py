"""The compiled multi-fidelity engine's schedule, run from the host one event at a time.

``nas.engine.multi_fidelity_runner`` runs a multi-fidelity searcher against W simulated workers. A live
study runs the same searcher against real workers; ``MFSchedule`` keeps the engine's bookkeeping so that,
given the same results in the same order, the searcher decides exactly what it decides in the engine:

- engine step ``t`` is the number of results told so far (plus idle steps, below); its keys are
  ``(k_ask, _, k_tell) = split(fold_in(key, t), 3)``, the searcher was initialized with
  ``fold_in(key, INIT_FOLD)``;
- an ask fills the lowest idle worker slot ``w`` and asks with ``fold_in(k_ask, w)``, while the resource
  spent is below the budget (``max_queries`` full evaluations; a promotion that continues is charged the
  difference to its parent's budget, ``charged_resource``; sums in float32, as the engine's);
- an ask the searcher answers with no job (``job.ok`` False: a synchronous rung waits for its last
  results) keeps the state it returns, as the engine does, and blocks further asks until the next
  result is told (the engine asks again only at its next step). With nothing running, the engine's
  next step is idle (nothing finishes): the step count moves on and the searcher is asked again with
  that step's keys, up to the engine's ``num_steps``;
- a tell at step ``t`` uses ``k_tell`` of step ``t``, frees its worker's slot and moves to ``t + 1``.

The slots are not capped at the searcher's ``workers``: a study may hand out more trials at once (the
searcher's state is sized for any number); its decisions equal the engine's with W workers when at most
W trials run at once and every freed slot is filled before the next result is told.
"""

from __future__ import annotations

import jax
import numpy as np

from nas.core.dedup import one_step_programs
from nas.core.multi_fidelity import Job, MultiFidelitySearcher
from nas.engine.compile_policy import compiler_options
from nas.engine.devices import default_compilation_cache
from nas.engine.runner import INIT_FOLD
from nas.host.programs import init_tree, kept_program
from nas.host.trials import BudgetSpent, NoTrialNow


def mf_programs(searcher: MultiFidelitySearcher) -> tuple:
    """Jitted ``init(key)``, ``ask(key, step, slot, state) -> (job, state)`` and ``tell(key, step, job, score,
    state) -> state``, the step keys derived inside (one program each), cached per searcher."""
    default_compilation_cache()  # kept on disk for the next process with this searcher (nas.engine.devices)

    def init(key):
        return searcher.init(jax.random.fold_in(key, INIT_FOLD))

    def ask(key, step, slot, state):
        k_ask = jax.random.split(jax.random.fold_in(key, step), 3)[0]
        with one_step_programs():  # one unbatched step: skip the proposals its result does not read
            return searcher.ask(jax.random.fold_in(k_ask, slot), state)

    def tell(key, step, job, score, state):
        k_tell = jax.random.split(jax.random.fold_in(key, step), 3)[2]
        return searcher.tell(k_tell, job, score, state)[0]

    # ask and tell with the options of the engine's chunk programs for this searcher (its compile profile): ASHA's
    # ask compiled in 2.0 s of CPU instead of 4.2 s at XLA's defaults and runs a step in ~0.5 ms (level 0: 1.2 s,
    # ~0.9 ms); the same jobs
    opts = compiler_options(searcher)
    job = Job(tokens=0, fidelity=0, parent=0, ok=0)  # a Job's tree (its leaves are the arrays ask returns)
    return (
        kept_program(searcher, "mf_study_init", init, init_tree(init), None),
        kept_program(searcher, "mf_study_ask", ask, lambda key, step, slot, st: jax.tree.structure((job, st)), opts),
        kept_program(searcher, "mf_study_tell", tell, lambda key, step, j, score, st: jax.tree.structure(st), opts),
    )


def charge(budgets: np.ndarray, fidelity: int, parent: int, continues: bool) -> np.float32:
    """``nas.engine.multi_fidelity_runner.charged_resource`` in numpy float32 (the same bits)."""
    full = budgets[fidelity]
    return np.float32(full - budgets[parent]) if continues and parent >= 0 else full


class MFSchedule:
    """The engine's steps, slots, budget and keys around one searcher's compiled ``ask``/``tell`` (module doc)."""

    def __init__(self, searcher: MultiFidelitySearcher, key: jax.Array, continues: bool, programs=None):
        self.searcher, self.key, self.continues = searcher, key, bool(continues)
        self._init, self._ask, self._tell = programs or mf_programs(searcher)
        self.state = None  # initialized by the first ask
        self.step = 0
        self.busy: set[int] = set()
        self.spent = np.float32(0.0)
        self.blocked_at = -1  # the step whose ask found no job (no more asks until a result is told)
        self.budgets = np.asarray(searcher.budgets, np.float32)
        self._max_resource = np.float32(searcher.max_resource)  # the searcher's options are frozen: once per study

    @property
    def budget_left(self) -> bool:
        return bool(self.spent < self._max_resource)

    def snapshot(self) -> tuple:
        """What ``restore`` puts back (the state is an immutable pytree: nothing is copied)."""
        return self.state, self.step, set(self.busy), self.spent, self.blocked_at

    def restore(self, snapshot: tuple) -> None:
        self.state, self.step, busy, self.spent, self.blocked_at = snapshot
        self.busy = set(busy)

    def ask(self) -> tuple[dict, int]:
        """The next job (``{"tokens", "fidelity", "parent"}``, parent a fidelity index or -1) and its slot;
        ``BudgetSpent`` once the budget is spent or nothing is left, ``NoTrialNow`` while the searcher waits."""
        if self.state is None:
            self.state = self._init(self.key)
        while True:
            if not self.budget_left:
                raise BudgetSpent(f"the study's budget of {self.searcher.max_queries} full evaluations "
                                  f"({self.searcher.max_resource:g} in fidelity units) is spent")  # fmt: skip
            if self.blocked_at == self.step:
                raise NoTrialNow(f"the searcher has no trial to start until a running one is told (step {self.step})")
            slot = min(set(range(len(self.busy) + 1)) - self.busy)
            job, self.state = self._ask(self.key, np.int32(self.step), np.int32(slot), self.state)
            # the job's fields as numpy, each a view of its ready buffer: bool()/int() on the jax.Array went through
            # its conversions four times (~15 us an ask); jax.device_get(job) measured ~15 us slower still
            ok, fidelity, parent, tokens = (np.asarray(x) for x in (job.ok, job.fidelity, job.parent, job.tokens))
            if ok:
                f, p = int(fidelity), int(parent)
                self.busy.add(slot)
                self.spent = np.float32(self.spent + charge(self.budgets, f, p, self.continues))
                return {"tokens": np.asarray(tokens, np.int32), "fidelity": f, "parent": p}, slot
            self.blocked_at = self.step
            if self.busy:
                raise NoTrialNow(f"the searcher has no trial to start until a running one is told (step {self.step})")
            self.step += 1  # the engine's idle step: nothing runs, nothing finishes
            if self.step >= self.searcher.num_steps:
                raise BudgetSpent("the searcher has no configuration left to start (every one was started)")

    def tell(self, job: dict, slot: int, score: float) -> None:
        """Tells ``score`` (f32, higher is better, ``-inf`` failed) for the job running in ``slot``."""
        if slot not in self.busy:
            raise ValueError(f"no job runs in worker slot {slot}")
        # numpy fields: the program converts them (jnp.asarray on the host dispatched 4 ops, ~0.2 ms)
        j = Job(tokens=np.asarray(job["tokens"], np.int32), fidelity=np.int32(job["fidelity"]),
                parent=np.int32(job["parent"]), ok=np.bool_(True))  # fmt: skip
        self.state = self._tell(self.key, np.int32(self.step), j, np.float32(score), self.state)
        self.busy.discard(slot)
        self.step += 1
