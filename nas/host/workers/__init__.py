"""Workers: where ``Study.optimize`` runs the objective. One interface, four backends.

``study.optimize(fn, n_workers=W, backend=...)`` fills every free worker with a trial, waits for the
next event, hands it to the study, and goes on until ``n_trials`` evaluations ran or the study has
nothing left (the loop: ``nas.host.optimize``). A backend is any object with these five methods:

- ``start(fn, pass_trial)``: before the first trial; ``fn`` gets the trial (``Study.optimize`` passes
  ``pass_trial=True``; False, nasjax 0.2's plain-study call, hands it a copy of the params);
- ``free() -> bool``: whether a trial can be submitted now;
- ``submit(trial)``: starts evaluating the trial (its plain fields, ``Trial.payload()``, travel to
  another process); returns at once, except inline;
- ``next_event() -> Event``: waits for the next event of a running trial (``nas.host.workers.events``:
  ``report`` with a ``reply(prune)`` back to the objective, ``done``, ``pruned``, ``error``, ``crash``,
  ``timeout``; how a trial ended carries its ``user_attrs``);
- ``close()``: shuts the workers down (after the last event, or when the loop raises: a worker still
  running a trial is killed).

Process and Ray workers take a ``trial_timeout`` (seconds): a trial that runs longer has its worker killed
(a fresh one takes the next trial) and comes back as a ``timeout`` event, recorded as a failed trial.

The backends: ``InlineWorkers`` (``inline``: one evaluation at a time in this thread, the default for one
worker), ``ThreadWorkers`` (``threads``: threads of this process, or an executor's: ``executor=`` of
``optimize``), ``ProcessWorkers`` (``process_workers``: fresh interpreters, the default for several workers)
and ``RayWorkers`` (``ray_workers``: Ray tasks, on one machine or a cluster). The backend only runs trials and
delivers events; the loop alone talks to the study.
"""

from __future__ import annotations

from nas.host.workers.events import Event, call_objective
from nas.host.workers.inline import InlineWorkers
from nas.host.workers.threads import ThreadWorkers

BACKENDS = ("inline", "thread", "process", "ray")

__all__ = ["BACKENDS", "Event", "InlineWorkers", "ThreadWorkers", "call_objective", "make_workers"]


def make_workers(backend=None, n_workers: int = 1, executor=None, trial_timeout: float | None = None):
    """A backend from ``backend`` (None, ``"inline"``, ``"thread"``, ``"process"``, ``"ray"`` or a backend
    object) for ``n_workers`` evaluations at once; an ``executor`` (``concurrent.futures``) becomes thread
    workers over it. None: inline for one worker, processes for more. ``trial_timeout``: seconds a trial may
    run before its worker is killed (process and Ray workers, and a workers object with a ``trial_timeout``)."""
    if trial_timeout is not None:
        mine = backend is not None and not isinstance(backend, str)  # a workers object
        if mine and hasattr(backend, "trial_timeout"):
            backend.trial_timeout = trial_timeout
        elif mine or executor is not None or backend in ("inline", "thread") or (backend is None and n_workers == 1):
            where = "an executor" if executor is not None else f"backend={backend!r}"
            where += " with one worker" if backend is None and executor is None else ""
            raise ValueError(f"trial_timeout= stops a trial by killing its worker process: give backend='process' "
                             f"or 'ray' ({where} runs trials where they cannot be stopped)")  # fmt: skip
    if executor is not None:
        if backend not in (None, "thread"):
            raise ValueError(f"executor= runs the trials as thread workers over the executor; give it or "
                             f"backend={backend!r}, not both")  # fmt: skip
        return ThreadWorkers(n_workers, executor=executor)
    if backend is not None and not isinstance(backend, str):
        return backend
    if backend is None:
        backend = "inline" if n_workers == 1 else "process"
    if backend == "inline":
        if n_workers != 1:
            raise ValueError(f"backend='inline' runs one evaluation at a time; n_workers={n_workers} needs "
                             "backend='process', 'thread' or 'ray'")  # fmt: skip
        return InlineWorkers()
    if backend == "thread":
        return ThreadWorkers(n_workers)
    if backend == "process":
        from nas.host.workers.process_workers import ProcessWorkers

        return ProcessWorkers(n_workers, trial_timeout=trial_timeout)
    if backend == "ray":
        from nas.host.workers.ray_workers import RayWorkers

        return RayWorkers(n_workers, trial_timeout=trial_timeout)
    raise ValueError(f"backend must be one of {BACKENDS} or a workers object, got {backend!r}")


_LAZY = {"ProcessWorkers": "nas.host.workers.process_workers", "RayWorkers": "nas.host.workers.ray_workers"}
_RENAMED = {"make_backend": "make_workers"}  # 0.2 names, kept for one release


def __getattr__(name: str):
    import importlib
    import warnings

    if name in _LAZY:  # imported when first used: Ray only with its backend
        return getattr(importlib.import_module(_LAZY[name]), name)
    if name in _RENAMED:
        warnings.warn(f"nas.host.workers.{name} is now nas.host.workers.{_RENAMED[name]}", DeprecationWarning,
                      stacklevel=2)  # fmt: skip
        return globals()[_RENAMED[name]]
    if name == "run_trials":
        warnings.warn("nas.host.workers.run_trials is now nas.host.optimize.run_optimize", DeprecationWarning,
                      stacklevel=2)  # fmt: skip
        return importlib.import_module("nas.host.optimize").run_optimize
    raise AttributeError(f"module 'nas.host.workers' has no attribute {name!r}")
