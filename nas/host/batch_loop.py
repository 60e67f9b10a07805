"""``Study.optimize`` without workers: the trials of a batch evaluated together, then told in order.

The searcher updates on whole batches, so the loop asks for what is left of the current batch (trials
handed out earlier and never told come first: a crash or an interruption), evaluates them in this process
or with ``executor.submit`` (e.g. a ``ThreadPoolExecutor``), and tells every value. A NaN or infinite value,
or an exception listed in ``catch``, marks its trial failed (the searcher sees ``-inf``); any other
exception propagates after the batch's other values are told, and its trial stays pending, so the next
``optimize`` evaluates it again. Workers that take trials as they become free are ``nas.host.workers``.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from typing import Any

from nas.host.trials import nonfinite


def optimize_in_batches(study, fn: Callable[[Any], Any], n_trials: int, executor, catch: tuple) -> None:
    """Evaluates ``fn(params)`` for ``n_trials`` trials of ``study`` (a ``nas.host.ask_tell.Study``)."""
    done = 0
    while done < n_trials:
        trials = study.pending()[: n_trials - done]
        if not trials:
            room = study.batch_size - len(study._batch) if study._batch_tokens is not None else study.batch_size
            trials = study.ask(min(room, n_trials - done, study.max_queries - len(study.trials)))
        results = evaluate(fn, trials, executor, catch)
        error = None
        for t, (value, exc) in zip(trials, results):
            if exc is not None:
                error = error or exc  # stays pending: evaluated again by the next optimize
                continue
            if value is not None and not isinstance(value, bool) and nonfinite(value):
                msg = f"trial {t.number}: the objective returned {value}; recorded as a failed evaluation"
                warnings.warn(msg, stacklevel=3)
                value = None
            study.tell(t, value)
        if error is not None:
            raise error
        done += len(trials)


def evaluate(fn, trials, executor, catch) -> list[tuple[Any, BaseException | None]]:
    """``(value, None)``, ``(None, None)`` for a caught exception, or ``(None, exc)``, per trial."""

    def safe(params):
        try:
            return fn(params), None
        except catch:
            return None, None
        except Exception as e:  # noqa: BLE001 - re-raised by optimize after the others are told
            return None, e

    params = [copy.deepcopy(t.params) for t in trials]  # an objective that edits its params changes nothing
    if executor is None:
        return [safe(p) for p in params]
    futures = [executor.submit(safe, p) for p in params]
    return [f.result() for f in futures]
