"""What ``Study.optimize`` shows while it runs: one redrawn line on a terminal, a line per finished trial in a log.

``optimize(show_progress=...)``:

- ``None`` (the default): when stderr is a terminal, one line redrawn in place every ``TICK_S`` and at each
  result::

      trials: 12 done, 2 running, 3 pruned, 1 failed | best 0.0312 (trial 7) | 0:14

  and, in a log (stderr is not a terminal), one ``INFO`` record per finished trial on the ``nas.host``
  logger (Optuna's line: ``trial 7 complete: value 0.0312 in 1.2 s, params {...}; best is trial 7 with
  0.0312``). Python shows a library's ``INFO`` records only where the script asks for them
  (``logging.basicConfig(level=logging.INFO)``), so a script's log stays as it was unless it does; Optuna
  instead installs a stderr handler of its own. ``logging.getLogger("nas.host").setLevel(logging.WARNING)``
  (or the ``nas`` logger's) turns the terminal line off too.
- ``True``: the line on a terminal, else the plain line per trial written to stderr, whatever the logging level.
- ``False``: nothing.

The searcher's first ``ask`` and ``tell`` in a process compile its programs (seconds on a CPU). While JAX
compiles in the loop's thread the line says so (``compiling regularized_evolution ask ... 3 s``); once it is
done the compile gets a line of its own, as the compiled runner's (``nas.engine.compile_notice``):
``compiling regularized_evolution ask ... 1.7 s (2 too quick to cache)``. Only the loop's thread is watched,
so an objective compiling in a worker thread is not taken for the searcher.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import shutil
import sys
import threading
import time

import jax

from nas.engine.compile_notice import CACHE_HIT, COMPILE_EVENTS, describe
from nas.engine.compiler_memory import BACKEND_COMPILE_EVENT

LOGGER = logging.getLogger("nas.host")
TICK_S = 1.0  # the terminal line's redraw, for the elapsed time and a compile's seconds
REDRAW_S = 0.1  # at most this often at results: a study of quick trials does not spend its time drawing
_NOTHING = contextlib.nullcontext()
_watched: dict[int, dict] = {}  # thread id -> compile counts of the searcher call running in it


@functools.cache
def _listen() -> None:
    """Registers (once per process) the listener that counts compile events in the watched threads."""

    def duration(event: str, secs: float, **_) -> None:
        counts = _watched.get(threading.get_ident())
        if counts is not None and event in COMPILE_EVENTS:
            counts["seconds"] += secs
            counts["events"] += 1
            if event == BACKEND_COMPILE_EVENT:
                counts["compiles"] += 1
                counts["slow"] += secs >= float(jax.config.jax_persistent_cache_min_compile_time_secs)

    def count(event: str, **_) -> None:
        counts = _watched.get(threading.get_ident())
        if counts is not None and event == CACHE_HIT:
            counts["hits"] += 1
            counts["events"] += 1

    jax.monitoring.register_event_duration_secs_listener(duration)
    jax.monitoring.register_event_listener(count)


def is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def silenced(logger: logging.Logger = LOGGER) -> bool:
    """Whether a level above INFO was set on ``nas.host`` or a parent of it below the root (the root's default
    WARNING does not count: it is no one's choice)."""
    while logger is not None and logger is not logging.root:
        if logger.level:
            return logger.level > logging.INFO
        logger = logger.parent
    return False


def clock(seconds: float) -> str:
    """``0:14``, ``12:03``, ``1:02:03``."""
    s = int(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def make_progress(study, show_progress, stream=None):
    """The progress of ``study.optimize`` for ``show_progress`` (module docstring): a ``Progress``, or a
    ``Silent`` one that does nothing."""
    stream = stream or sys.stderr
    terminal = is_terminal(stream)
    if show_progress is False or (show_progress is None and silenced()):
        return Silent()
    if show_progress is None and not terminal:
        return Progress(study, stream, terminal=False, log=True) if LOGGER.isEnabledFor(logging.INFO) else Silent()
    return Progress(study, stream, terminal=terminal, log=False)


class Silent:
    """``show_progress=False``: every call does nothing."""

    def start(self) -> None:
        pass

    def searcher_call(self, what: str):
        return _NOTHING

    def started(self, running: int) -> None:
        pass

    def finished(self, trial, running: int, reason: str | None = None) -> None:
        pass

    def close(self) -> None:
        pass


class Progress(Silent):
    """The line on a ``terminal``, else a line per finished trial: written to ``stream``, or with ``log`` an INFO
    record on the ``nas.host`` logger."""

    def __init__(self, study, stream, terminal: bool, log: bool):
        self.study, self.stream, self.terminal, self.log = study, stream, terminal, log
        self.label = getattr(getattr(study, "_driver", None), "name", type(study.searcher).__name__)
        self.counts = {"complete": 0, "pruned": 0, "failed": 0}
        self.running, self.best, self.call = 0, None, None  # call: (what, start, compile counts) running now
        self.lock = threading.Lock()  # the ticker thread and the loop draw the one line
        self.stop = threading.Event()
        self.ticker: threading.Thread | None = None
        self.drawn, self.last = False, 0.0

    def start(self) -> None:
        _listen()
        self.t0 = time.perf_counter()
        for t in self.study.trials:
            if t.state in self.counts:
                self.counts[t.state] += 1
                self._consider(t)
        if self.terminal:
            self.draw()
            self.ticker = threading.Thread(target=self._tick, daemon=True, name="nasjax-progress")
            self.ticker.start()

    # -- what the loop tells ------------------------------------------------------------------------
    @contextlib.contextmanager
    def searcher_call(self, what: str):
        """Around the study's ``ask`` or ``tell``: JAX compiles in it the first time (module docstring)."""
        counts = {"seconds": 0.0, "events": 0, "compiles": 0, "slow": 0, "hits": 0}
        ident = threading.get_ident()
        start = time.perf_counter()
        _watched[ident], self.call = counts, (what, start, counts)
        try:
            yield
        finally:
            _watched.pop(ident, None)
            self.call = None
            if counts["compiles"] or counts["hits"]:
                seconds = min(counts["seconds"], time.perf_counter() - start)
                self.say(f"compiling {self.label} {what} ... "
                         f"{describe(seconds, counts['compiles'], counts['slow'], counts['hits'])}")  # fmt: skip

    def started(self, running: int) -> None:
        self.running = running
        if self.terminal:
            self.draw(soon=True)

    def finished(self, trial, running: int, reason: str | None = None) -> None:
        """``trial`` was told (its state final), ``reason``: why it failed when the study knows."""
        self.running = running
        if trial.state in self.counts:
            self.counts[trial.state] += 1
            self._consider(trial)
        if not self.terminal or (LOGGER.isEnabledFor(logging.INFO) and LOGGER.hasHandlers()):
            self.say(self.trial_line(trial, reason), record=True)
        elif self.terminal:
            self.draw(soon=True)

    def close(self) -> None:
        self.stop.set()
        if self.ticker is not None:
            self.ticker.join()
        if self.terminal:
            with self.lock:
                self._write(self.line())
                self.stream.write("\n")
                self.stream.flush()

    # -- what is shown ------------------------------------------------------------------------------
    def line(self) -> str:
        c = self.counts
        parts = [f"trials: {c['complete']} done, {self.running} running, {c['pruned']} pruned, {c['failed']} failed"]
        if self.best is not None:
            parts.append(f"best {self.best.value:.6g} (trial {self.best.number})")
        call = self.call
        if call is not None and call[2]["events"]:
            parts.append(f"compiling {self.label} {call[0]} ... {time.perf_counter() - call[1]:.0f} s")
        parts.append(clock(time.perf_counter() - self.t0))
        return " | ".join(parts)

    def trial_line(self, trial, reason: str | None) -> str:
        if trial.values is not None:
            value = f"values {list(trial.values)}"
        else:
            value = "no value" if trial.value is None else f"value {trial.value:.6g}"
        cost = "" if trial.cost is None else f" in {trial.cost:.2f} s"
        budget = "" if trial.budget is None else f" at budget {trial.budget:g}"
        why = f" ({reason})" if reason else ""
        text = f"trial {trial.number} {trial.state}{why}{budget}: {value}{cost}, params {trial.params!r:.200}"
        if self.best is not None:
            text += f"; best is trial {self.best.number} with {self.best.value:.6g}"
        return text

    def say(self, text: str, record: bool = False) -> None:
        """A line of its own: above the terminal's line (which is drawn again), or a record in the log."""
        if self.log or (record and self.terminal):
            with self.lock:
                if self.terminal and self.drawn:
                    self.stream.write("\r\x1b[K")
                    self.stream.flush()
                LOGGER.info(text)
                if self.terminal:
                    self._write(self.line())
            return
        with self.lock:
            if self.terminal:
                self.stream.write("\r\x1b[K" + text + "\n")
                self._write(self.line())
            else:
                self.stream.write(text + "\n")
                self.stream.flush()

    def draw(self, soon: bool = False) -> None:
        """Redraws the line; ``soon``: unless it was drawn less than ``REDRAW_S`` ago (quick trials), the ticker
        draws it next."""
        if soon and time.perf_counter() - self.last < REDRAW_S:
            return
        with self.lock:
            self._write(self.line())

    def _write(self, text: str) -> None:
        width = shutil.get_terminal_size((100, 24)).columns - 1  # a line that wraps cannot be redrawn
        self.stream.write("\r" + text[:width] + "\x1b[K")
        self.stream.flush()
        self.drawn, self.last = True, time.perf_counter()

    def _tick(self) -> None:
        while not self.stop.wait(TICK_S):
            self.draw()

    def _consider(self, trial) -> None:
        """The best trial so far, kept as results arrive (one objective; a multi-fidelity study's at its top
        fidelity), as ``study.best_trial`` picks it."""
        if trial.state != "complete" or trial.value is None or self.study.num_objectives != 1:
            return
        fidelities = self.study.fidelities
        if getattr(self.study, "kind", None) == "multi_fidelity" and trial.fidelity != len(fidelities) - 1:
            return
        sign = -1.0 if self.study.direction == "minimize" else 1.0
        if self.best is None or sign * trial.value > sign * self.best.value:
            self.best = trial
