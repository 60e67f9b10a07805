"""Searches whose evaluation runs on the host: registered searchers, ``nas.host.study.Study``, a batch evaluator.

The compiled runner (``nas.engine.runner``) needs ``query(key, tokens)`` under jit. Objectives that
cannot be traced (networks compiled from a language space, whose shapes depend on the token
values: ``spaces.language.tasks``) are driven from Python instead: each step the searcher's
jit-compiled ``ask`` proposes a batch, the host evaluates the whole batch at once
(``evaluate(tokens[B, N], seeds[B]) -> {"valid", "test", "cost", ...}``, so it can group and
vmap candidates), and ``tell`` receives the validation scores. ``Study`` keeps the key schedule
of ``nas.engine.runner.search_step`` and the never-query-twice rule of the searchers.

A failed evaluation (``-inf``: an invalid string, a diverged run) is told as a failed trial; the
searcher sees ``-inf``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from nas.engine.incumbent import incumbent_indices
from nas.host.study import Study


def run_host_search(
    evaluate: Callable[[np.ndarray, np.ndarray], dict],
    space,
    searcher: str,
    seed: int,
    max_queries: int,
    train_seed: int | None = None,
    **options,
) -> dict[str, np.ndarray]:
    """One search: ``max_queries`` evaluations proposed by registered searcher ``searcher``.

    ``train_seed`` (default ``seed``) seeds every evaluation of the run, so two searchers run
    with the same seed score an architecture they both propose identically.

    Returns numpy arrays over queries: ``tokens`` int32[Q, N], ``valid``, ``test``, ``cost``
    (f32[Q]), every other key ``evaluate`` returns, and ``wall_s`` (seconds at each query's batch end).
    """
    study = Study(space, searcher=searcher, direction="maximize", seed=seed, max_queries=max_queries, **options)
    train_seed = seed if train_seed is None else int(train_seed)
    rows: dict[str, list] = {"tokens": [], "wall_s": []}
    start = time.perf_counter()
    while len(study.trials) < max_queries:
        trials = study.ask(min(study.batch_size, max_queries - len(study.trials)))
        tokens = np.stack([t.tokens for t in trials]).astype(np.int32)
        res = evaluate(tokens, np.full(len(trials), train_seed, np.int64))
        for t, v in zip(trials, np.asarray(res["valid"], np.float64)):
            study.tell(t, float(v) if np.isfinite(v) else None)
        rows["tokens"].append(tokens)
        rows["wall_s"].append(np.full(len(trials), time.perf_counter() - start))
        for k, v in res.items():
            rows.setdefault(k, []).append(np.asarray(v, np.float32))
    return {k: np.concatenate(v) for k, v in rows.items()}


def incumbent_curves(valid: np.ndarray, test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Best validation score so far and the test score of that incumbent, per query (f32[Q] each)."""
    valid = np.where(np.isfinite(valid), valid, -np.inf)
    idx = np.maximum(incumbent_indices(valid), 0)  # query 0 while none is above -inf
    return np.maximum.accumulate(valid), np.asarray(test)[idx]
