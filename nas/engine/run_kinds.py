"""A run's kind: what the chunked loop does differently for a single- and a multi-fidelity searcher.

The chunked loop (``nas.engine.chunked_loop``) runs every searcher the same way: an init program, then
compiled chunks of steps with progress, per-chunk lines and checkpoints between them. What one step is,
what a seed has done after it and where the incumbent comes from depend on the searcher's kind, chosen
once per run (``run_kind(searcher)``):

- ``SINGLE_FIDELITY``: a step asks, queries and tells one batch (``nas.engine.runner``); a seed has done
  ``step * batch_size`` queries (at most the budget); a budget that is not a multiple of the batch size
  ends with a partial batch, a program of its own; the history is the first ``max_queries`` rows.
- ``MULTI_FIDELITY``: a step is one finished evaluation of W simulated workers
  (``nas.engine.multi_fidelity_runner``); a seed has done as many evaluations as its history has rows
  with a fidelity; the incumbent is the best among top-fidelity evaluations (``nas.engine.incumbent``);
  the per-chunk lines add the resource spent; the history is every row.

Only the init and step functions run inside compiled programs; the rest reads host arrays between chunks.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from nas.core.contract import Searcher
from nas.core.multi_fidelity import is_multi_fidelity
from nas.engine.devices import gather_seeds
from nas.engine.incumbent import top_fidelity_score
from nas.engine.multi_fidelity_runner import mf_init_state, mf_run_steps
from nas.engine.runner import init_state, last_batch_rows, run_steps


def auto_chunk_steps(num_steps: int, target_chunks: int = 10) -> int:
    """The divisor of ``num_steps`` closest to ``num_steps / target_chunks``.

    A divisor keeps every chunk the same length, so one program is compiled.
    """
    want = max(1, num_steps / target_chunks)
    divisors = [d for d in range(1, num_steps + 1) if num_steps % d == 0]
    return min(divisors, key=lambda d: (abs(d - want), d))


def evaluations_done(fidelity: np.ndarray) -> float:
    """Finished evaluations per seed, mean over seeds, of multi-fidelity histories (``fidelity`` int[S, E], -1
    on the rows no evaluation reached)."""
    return float(np.mean(np.sum(np.asarray(fidelity) >= 0, axis=-1)))


class RunKind:
    """The steps of one kind of searcher and what the loop reads between them (module docstring)."""

    name: str = ""
    counts: str = ""  # what a seed's progress counts ("queries", "evaluations")
    init_state: Callable  # (searcher, key, metrics) -> the run state of one seed
    run_steps: Callable  # (searcher, objective, key, state, length, rows, metrics) -> (state, metrics[length])

    def __repr__(self) -> str:
        return f"<run kind {self.name}>"

    def chunk_steps(self, searcher: Searcher) -> int:
        """The chunk length when the caller asks for none (``chunk_steps=0``)."""
        return auto_chunk_steps(searcher.num_steps)

    def last_rows(self, searcher: Searcher) -> int | None:
        """The strings the last step evaluates when fewer than a batch, else None."""
        return None

    def queries_done(self, searcher: Searcher, step: int) -> int:
        """Queries (history rows) per seed after ``step`` steps."""
        raise NotImplementedError

    def done_per_seed(self, searcher: Searcher, state, step: int) -> float:
        """What the progress bar counts per seed after ``step`` steps (every process takes part: a gather)."""
        return self.queries_done(searcher, step)

    def incumbent_score(self, searcher: Searcher, score: np.ndarray, history) -> np.ndarray:
        """``score`` ([S, T], host) with the rows that cannot be the incumbent at ``-inf``."""
        return score

    def chunk_info(self, state) -> dict[str, float]:
        """What a per-chunk line adds for this kind (gathered host values)."""
        return {}

    def history(self, searcher: Searcher, state):
        """The run's history from its final state."""
        raise NotImplementedError


class SingleFidelity(RunKind):
    """A batch of queries per step, every one at the objective's only (or top) fidelity."""

    name, counts = "single-fidelity", "queries"
    init_state = staticmethod(init_state)
    run_steps = staticmethod(run_steps)

    def last_rows(self, searcher: Searcher) -> int | None:
        return last_batch_rows(searcher)

    def queries_done(self, searcher: Searcher, step: int) -> int:
        return min(step * searcher.batch_size, searcher.max_queries)

    def history(self, searcher: Searcher, state):
        return state.history.first(searcher.max_queries)


class MultiFidelity(RunKind):
    """One finished evaluation per step, at the fidelity the searcher chose (W simulated workers)."""

    name, counts = "multi-fidelity", "evaluations"
    init_state = staticmethod(mf_init_state)

    @staticmethod
    def run_steps(searcher, objective, key, state, length, rows, metrics):
        del rows  # one job per ask: never a partial batch
        return mf_run_steps(searcher, objective, key, state, length, metrics)

    def chunk_steps(self, searcher: Searcher) -> int:
        # a bound on evaluations, often without a divisor near total / 10: then ~10 chunks and 2 programs
        total = searcher.num_steps
        steps = auto_chunk_steps(total)
        return steps if total / 20 <= steps <= total / 5 else -(-total // 10)

    def queries_done(self, searcher: Searcher, step: int) -> int:
        return step

    def done_per_seed(self, searcher: Searcher, state, step: int) -> float:
        return evaluations_done(gather_seeds(state.history.fidelity))

    def incumbent_score(self, searcher: Searcher, score: np.ndarray, history) -> np.ndarray:
        return top_fidelity_score(score, gather_seeds(history.fidelity), searcher.num_fidelities)

    def chunk_info(self, state) -> dict[str, float]:
        return {
            "resource_spent_mean": float(np.mean(gather_seeds(state.spent))),
            "evaluations_mean": evaluations_done(gather_seeds(state.history.fidelity)),
        }

    def history(self, searcher: Searcher, state):
        return state.history


SINGLE_FIDELITY = SingleFidelity()
MULTI_FIDELITY = MultiFidelity()


def run_kind(searcher: Searcher) -> RunKind:
    """The kind of ``searcher``'s runs: ``MULTI_FIDELITY`` for a multi-fidelity searcher
    (``nas.core.multi_fidelity``), else ``SINGLE_FIDELITY``."""
    return MULTI_FIDELITY if is_multi_fidelity(searcher) else SINGLE_FIDELITY
