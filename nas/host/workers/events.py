"""What a worker reports to ``Study.optimize``: one ``Event`` per happening of a trial it runs.

Kinds: ``report`` (an intermediate value, with ``step`` and ``reply``: the way back to the waiting
objective with the pruner's decision), ``done`` (the objective returned ``value``), ``pruned`` (it raised
``TrialPruned``), ``error`` (it raised ``value``, the exception), ``crash`` (the worker itself died:
``value`` says how) and ``timeout`` (it ran past the workers' ``trial_timeout`` and its worker was killed:
``value`` says so). ``call_objective`` runs an objective and says how it ended; every backend calls it
where the objective runs (a thread, a worker process, a Ray task). Nothing here imports JAX.
"""

from __future__ import annotations

import copy
import dataclasses
import time
from typing import Any

from nas.host.trials import TrialPruned

KINDS = ("report", "done", "pruned", "error", "crash", "timeout")


@dataclasses.dataclass
class Event:
    kind: str  # KINDS
    number: int  # the trial's number
    value: Any = None  # the returned or reported value, the exception, or why the worker died
    step: float | None = None  # a report's step
    elapsed: float | None = None  # seconds the objective ran
    reply: Any = None  # a report's way back to its worker: reply(prune: bool)
    user_attrs: dict | None = None  # what the objective kept with trial.set_user_attr (from another process)


def call_objective(fn, trial, pass_trial: bool = True) -> Event:
    """Runs ``fn`` on ``trial`` and says how it ended (``done``, ``pruned``, ``error``), with the trial's
    ``user_attrs``. ``pass_trial=False`` (a workers object of nasjax 0.2's loop) hands ``fn`` a copy of the
    params instead; ``Study.optimize`` always hands the trial."""
    start = time.perf_counter()
    try:
        value = fn(trial if pass_trial else copy.deepcopy(trial.params))  # edited params change nothing
        kind, value = "done", value
    except TrialPruned:
        kind, value = "pruned", None
    except Exception as e:  # noqa: BLE001 - the loop decides (catch, or raised after the others)
        kind, value = "error", e
    attrs = dict(getattr(trial, "user_attrs", None) or {}) or None
    return Event(kind, trial.number, value, elapsed=time.perf_counter() - start, user_attrs=attrs)
