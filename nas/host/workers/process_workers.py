"""Worker processes for ``study.optimize(..., n_workers=W)``: W fresh Python interpreters on this machine.

JAX is not fork-safe (a forked child inherits its threads' locks), so workers are never forked: each is a
new interpreter (``subprocess`` running this module) that imports only what the objective needs, talks to
the study over a socket pair (``multiprocessing.connection``), and runs one trial at a time:

- the objective travels pickled (``cloudpickle`` when installed, so lambdas and functions of a script
  work; else ``pickle``: a function importable by name), with the study's ``sys.path``;
- a trial travels as its plain fields (``Trial.payload``); in the worker ``trial.report(step, value)``
  sends the value to the study and waits for the pruner's decision, which ``trial.should_prune()``
  returns;
- the result (the value, ``TrialPruned``, or the exception with its traceback) goes back when the
  objective ends. A worker that dies (killed, ``os._exit``, out of memory) closes its socket: the study
  sees a ``crash`` of that trial only (``nas.host.workers``) and starts a fresh worker for the next one.

Workers set ``XLA_PYTHON_CLIENT_PREALLOCATE=false`` unless it is set, so W workers can share one GPU
(each takes memory as it needs it instead of 75% up front); give them one GPU each with
``CUDA_VISIBLE_DEVICES`` in ``env=`` of ``ProcessWorkers(W, env=...)`` as you need. POSIX only.
"""

from __future__ import annotations

import json
import os
import pickle
import socket
import subprocess
import sys
import traceback
from multiprocessing.connection import Connection, wait

from nas.host.trials import Trial
from nas.host.workers.events import Event, call_objective


def dumps(fn) -> bytes:
    """``fn`` pickled for another interpreter (``cloudpickle`` when installed)."""
    try:
        import cloudpickle

        return cloudpickle.dumps(fn)
    except ImportError:
        pass
    try:
        return pickle.dumps(fn)
    except (pickle.PicklingError, AttributeError, TypeError) as e:
        raise TypeError(f"process workers need a picklable objective ({e}); define it at the top level of a module, "
                        "pip install cloudpickle, or use backend='thread'") from None  # fmt: skip


class _Worker:
    def __init__(self, setup: tuple, env: dict | None):
        ours, theirs = socket.socketpair()
        boot = ("import json, sys; sys.path[:0] = json.loads(sys.argv[1]); "
                "from nas.host.workers.process_workers import main; main(int(sys.argv[2]))")  # fmt: skip
        self.proc = subprocess.Popen([sys.executable, "-c", boot, json.dumps(sys.path), str(theirs.fileno())],
                                     pass_fds=[theirs.fileno()], env=env)  # fmt: skip
        theirs.close()
        self.conn = Connection(ours.detach())
        self.conn.send(setup)
        self.number: int | None = None  # the trial it runs

    def exit_reason(self) -> str:
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        return f"killed by signal {-code}" if code < 0 else f"exit code {code}"


class ProcessWorkers:
    """``n_workers`` worker processes (module docstring); ``env``: their environment (default: this one's)."""

    def __init__(self, n_workers: int, env: dict | None = None):
        self.n_workers, self.env = int(n_workers), env
        self.workers: list[_Worker] = []

    def start(self, fn, pass_trial: bool) -> None:
        self.setup = ("setup", dumps(fn), pass_trial)
        self.events: list[Event] = []

    def free(self) -> bool:
        return sum(w.number is not None for w in self.workers) < self.n_workers

    def submit(self, trial) -> None:
        idle = [w for w in self.workers if w.number is None]
        w = idle[0] if idle else _Worker(self.setup, self.env)
        if not idle:
            self.workers.append(w)
        w.conn.send(("run", trial.payload()))
        w.number = trial.number

    def next_event(self) -> Event:
        while not self.events:
            busy = {w.conn: w for w in self.workers if w.number is not None}
            for conn in wait(list(busy)):
                self._read(busy[conn])
        return self.events.pop(0)

    def _read(self, w: _Worker) -> None:
        try:
            msg = w.conn.recv()
        except (EOFError, OSError):  # the worker died: only its trial is lost
            self.events.append(Event("crash", w.number, w.exit_reason()))
            w.conn.close()
            self.workers.remove(w)
            return
        kind = msg[0]
        if kind == "fatal":
            raise RuntimeError(f"a worker process could not start: {msg[1]}")
        if kind == "report":
            _, number, step, value = msg
            self.events.append(Event("report", number, value, step=step, reply=lambda p: w.conn.send(("prune", p))))
            return
        _, number, value, elapsed, trace = msg
        if trace and hasattr(value, "add_note"):
            value.add_note(f"in the worker process:\n{trace}")
        self.events.append(Event(kind, number, value, elapsed=elapsed))
        w.number = None

    def close(self) -> None:
        for w in self.workers:
            try:
                w.conn.send(("stop",))
            except OSError:
                pass
        for w in self.workers:
            try:
                w.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                w.proc.kill()
                w.proc.wait()
            w.conn.close()
        self.workers = []


class _Channel:
    """A worker's way to the study: ``trial.report`` sends, and waits for the pruner's decision."""

    def __init__(self, conn: Connection):
        self.conn, self.stopped = conn, False

    def report(self, number: int, step: float, value: float) -> bool:
        self.conn.send(("report", number, float(step), value))
        _, self.stopped = self.conn.recv()
        return self.stopped

    def should_prune(self, number: int) -> bool:
        return self.stopped


def _sendable(value):
    try:
        pickle.dumps(value)
        return value
    except Exception:  # noqa: BLE001 - an exception or value that does not pickle travels as text
        return RuntimeError(f"{type(value).__name__}: {value}")


def main(fd: int) -> None:
    """A worker: set up from the study's first message, then run trials until told to stop."""
    conn = Connection(fd)
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    _, blob, pass_trial = conn.recv()
    try:
        fn = pickle.loads(blob)
    except Exception:  # noqa: BLE001 - told to the study in one message
        conn.send(("fatal", traceback.format_exc(limit=3)))
        return
    while True:
        msg = conn.recv()
        if msg[0] == "stop":
            return
        channel = _Channel(conn)
        trial = Trial(**msg[1], _study=channel)
        event = call_objective(fn, trial, pass_trial)
        trace = "".join(traceback.format_exception(event.value)) if event.kind == "error" else ""
        conn.send((event.kind, event.number, _sendable(event.value), event.elapsed, trace))
