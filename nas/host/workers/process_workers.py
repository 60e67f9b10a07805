"""Worker processes for ``study.optimize(..., n_workers=W)``: W fresh Python interpreters on this machine.

JAX is not fork-safe (a forked child inherits its threads' locks), so workers are never forked: each is a
new interpreter (``subprocess`` running this module) that imports only what the objective needs, talks to
the study over a socket pair (``multiprocessing.connection``), and runs one trial at a time:

- the objective travels pickled (``cloudpickle`` when installed, so lambdas and functions of a script
  work; else ``pickle``: a function importable by name), with the study's ``sys.path``;
- a trial travels as its plain fields (``Trial.payload``); in the worker ``trial.report(value, step)``
  sends the value to the study and waits for the pruner's decision, which ``trial.should_prune()``
  returns;
- the result (the value, ``TrialPruned``, or the exception with its traceback, and the trial's
  ``user_attrs``) goes back when the objective ends. A worker that dies (killed, ``os._exit``, out of
  memory) closes its socket: the study sees a ``crash`` of that trial only (``nas.host.workers``) and
  starts a fresh worker for the next one.
- ``ProcessWorkers(W, trial_timeout=seconds)``: a trial that runs longer has its worker killed (SIGKILL; a
  fresh one takes the next trial) and comes back as a ``timeout`` event, recorded as failed.

A worker never outlives its study: ``close`` kills a worker still running a trial (the loop closes on
SIGINT and SIGTERM too), and a worker whose study died (``kill -9``) notices within ``PARENT_POLL_S`` and
exits quietly, as it does when its socket to the study closes (no ``ConnectionResetError`` traceback in the
study's log). SIGINT (Ctrl-C reaches every process of the terminal) ends a worker without a traceback.

Workers set ``XLA_PYTHON_CLIENT_PREALLOCATE=false`` unless it is set, so W workers can share one GPU
(each takes memory as it needs it instead of 75% up front); give them one GPU each with
``CUDA_VISIBLE_DEVICES`` in ``env=`` of ``ProcessWorkers(W, env=...)`` as you need. POSIX only.
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from multiprocessing.connection import Connection, wait

from nas.host.trials import Trial
from nas.host.workers.events import Event, call_objective

PARENT_POLL_S = 1.0  # how often a worker checks that its study is alive
STOP_GRACE_S = 2.0  # a running worker told to stop (SIGTERM) gets this long before SIGKILL


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
                "from nas.host.workers.process_workers import main; main(*map(int, sys.argv[2:]))")  # fmt: skip
        argv = [sys.executable, "-c", boot, json.dumps(sys.path), str(theirs.fileno()), str(os.getpid())]
        self.proc = subprocess.Popen(argv, pass_fds=[theirs.fileno()], env=env)
        theirs.close()
        self.conn = Connection(ours.detach())
        self.conn.send(setup)
        self.number: int | None = None  # the trial it runs
        self.since: float | None = None  # when the objective of that trial started (time.monotonic)

    def reply(self, prune: bool) -> None:
        try:
            self.conn.send(("prune", prune))
        except OSError:  # the worker is gone (killed for its time limit): nothing waits for the answer
            pass

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self.conn.close()

    def exit_reason(self) -> str:
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        return f"killed by signal {-code}" if code < 0 else f"exit code {code}"


class ProcessWorkers:
    """``n_workers`` worker processes (module docstring); ``env``: their environment (default: this one's);
    ``trial_timeout``: seconds a trial may run before its worker is killed (None: no limit)."""

    def __init__(self, n_workers: int, env: dict | None = None, trial_timeout: float | None = None):
        self.n_workers, self.env, self.trial_timeout = int(n_workers), env, trial_timeout
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
        w.number, w.since = trial.number, None  # its clock starts when the worker starts the objective

    def next_event(self) -> Event:
        while not self.events:
            seconds = self._stop_late()
            if self.events:
                break
            busy = {w.conn: w for w in self.workers if w.number is not None}
            for conn in wait(list(busy), timeout=seconds):
                self._read(busy[conn])
        return self.events.pop(0)

    def _stop_late(self) -> float | None:
        """Kills the workers whose trial ran past ``trial_timeout`` (a ``timeout`` event each); the seconds
        until the next one would (None: no limit)."""
        if self.trial_timeout is None:
            return None
        now, limit, soonest = time.monotonic(), self.trial_timeout, None
        for w in [w for w in self.workers if w.number is not None and w.since is not None]:
            ran = now - w.since
            if ran < limit:
                soonest = limit - ran if soonest is None else min(soonest, limit - ran)
                continue
            w.kill()
            self.workers.remove(w)
            self.events.append(Event("timeout", w.number, f"it ran longer than trial_timeout={limit:g} s and its "
                                     "worker process was killed", elapsed=ran))  # fmt: skip
        return soonest

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
        if kind == "started":  # a fresh worker's interpreter start is not the trial's time
            w.since = time.monotonic()
            return
        if kind == "report":
            _, number, step, value = msg
            self.events.append(Event("report", number, value, step=step, reply=w.reply))
            return
        _, number, value, elapsed, trace, attrs = msg
        if trace and hasattr(value, "add_note"):
            value.add_note(f"in the worker process:\n{trace}")
        self.events.append(Event(kind, number, value, elapsed=elapsed, user_attrs=attrs))
        w.number = None

    def close(self) -> None:
        """Idle workers are told to stop; a worker still running a trial (the loop was interrupted: SIGINT,
        SIGTERM, an error of the study) gets SIGTERM, then SIGKILL after ``STOP_GRACE_S``."""
        for w in self.workers:
            if w.number is not None:
                w.proc.terminate()
                continue
            try:
                w.conn.send(("stop",))
            except OSError:
                pass
        for w in self.workers:
            try:
                w.proc.wait(timeout=STOP_GRACE_S if w.number is not None else 10)
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


def _exit_with(study_pid: int) -> None:
    """Ends this worker, quietly, once its study process is gone (its parent changes): a hanging trial of a
    killed study does not run on."""
    while os.getppid() == study_pid:
        time.sleep(PARENT_POLL_S)
    os._exit(0)


def main(fd: int, study_pid: int | None = None) -> None:
    """A worker: set up from the study's first message, then run trials until told to stop, or until the study
    is gone (module docstring)."""
    signal.signal(signal.SIGINT, lambda *_: os._exit(128 + signal.SIGINT))  # the study reports the interrupt
    if study_pid is not None:
        threading.Thread(target=_exit_with, args=(study_pid,), daemon=True).start()
    conn = Connection(fd)
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    try:
        _serve(conn)
    except (EOFError, OSError):  # the study closed its end or died: nothing to tell it
        pass


def _serve(conn: Connection) -> None:
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
        conn.send(("started", trial.number))
        event = call_objective(fn, trial, pass_trial)
        trace = "".join(traceback.format_exception(event.value)) if event.kind == "error" else ""
        conn.send((event.kind, event.number, _sendable(event.value), event.elapsed, trace,
                   _sendable(event.user_attrs)))  # fmt: skip
