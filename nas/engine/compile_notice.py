"""One line per compile: what is being compiled, how long it took, and whether the cache served it.

XLA compiles a searcher's programs the first time they run; on a CPU that takes from a second to
minutes (a GP searcher, ReMAADE's policy, an MLP-training objective), during which a run would
print nothing. ``compile_notice(label)`` writes ``compiling <label> ...`` to stderr before the
compiled call and, once it returns, the seconds spent compiling and where the result went::

    compiling regularized_evolution ... 3.1 s (kept in the compilation cache /root/.cache/nasjax/jax)
    compiling regularized_evolution ... 0.2 s (2 programs from the compilation cache)

On a terminal the line counts the seconds while it waits (``compiling nasbot ... 12 s``, the count
redrawn every ``TICK_S``), so a compile of a minute does not look like a hang; the final figure replaces
the count. Output that is not a terminal (a log, a pipe, CI) gets the one line only.

The seconds are JAX's own compile events (tracing, lowering, XLA) during the call, read through
``jax.monitoring``, and at most the wall time of the block (programs compiled in parallel threads,
``nas.engine.program_cache``, overlap); the first execution of the program is not in them. JAX's persistent cache keeps
a program that took at least ``jax_persistent_cache_min_compile_time_secs`` to compile, so a line
says "kept" only for those.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import threading
import time

import jax

from nas.engine.compiler_memory import BACKEND_COMPILE_EVENT

COMPILE_EVENTS = (
    BACKEND_COMPILE_EVENT,
    "/jax/core/compile/jaxpr_trace_duration",
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
)
CACHE_HIT = "/jax/compilation_cache/cache_hits"

TICK_S = 1.0  # a terminal's count of seconds while a compile runs
_totals = {"seconds": 0.0, "compiles": 0, "slow": 0, "hits": 0}  # since the listeners were registered
_lock = threading.Lock()  # compiles in several threads report at once


@functools.cache
def _listen() -> None:
    """Registers (once per process) the listeners that count compile seconds, compiles and cache hits."""

    def duration(event: str, secs: float, **_) -> None:
        with _lock:
            if event in COMPILE_EVENTS:
                _totals["seconds"] += secs
            if event == BACKEND_COMPILE_EVENT:
                _totals["compiles"] += 1
                _totals["slow"] += secs >= _min_cached_secs()

    def count(event: str, **_) -> None:
        if event == CACHE_HIT:
            with _lock:
                _totals["hits"] += 1

    jax.monitoring.register_event_duration_secs_listener(duration)
    jax.monitoring.register_event_listener(count)


def _cache_dir() -> str:
    return jax.config.jax_compilation_cache_dir or ""


def _min_cached_secs() -> float:
    return float(jax.config.jax_persistent_cache_min_compile_time_secs)


def describe(seconds: float, compiles: int, slow: int, hits: int) -> str:
    """``"3.1 s (...)"``: the compile time and what the persistent cache did with the programs."""
    cache = _cache_dir()
    parts = [f"{hits} program{'s' * (hits != 1)} from the compilation cache"] if hits else []
    if compiles and not cache:
        parts.append("no compilation cache: --compilation_cache is off")
    elif compiles:
        if slow:
            parts.append(f"{slow} program{'s' * (slow != 1)} kept in the compilation cache {cache}")
        if compiles - slow:
            parts.append(f"{compiles - slow} too quick to cache")
    return f"{seconds:.1f} s ({'; '.join(parts)})"


def _count_seconds(stream, t0: float, stop: threading.Event, drawn: list) -> None:
    """Writes the seconds since ``t0`` every ``TICK_S`` until ``stop``, each over the last with backspaces:
    only the count is redrawn, so a line that wraps (many searchers' labels) stays one line."""
    while not stop.wait(TICK_S):
        count = f"{time.perf_counter() - t0:.0f} s"
        stream.write("\b" * drawn[0] + count)
        stream.flush()
        drawn[0] = len(count)


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


@contextlib.contextmanager
def compile_notice(label: str, enabled: bool = True, stream=None):
    """``compiling <label> ...`` before the block, the compile seconds and cache use after it (stderr); on a
    terminal the seconds count up meanwhile (module docstring)."""
    if not enabled:
        yield
        return
    _listen()
    stream = stream or sys.stderr
    before = dict(_totals)
    t0 = time.perf_counter()
    stream.write(f"compiling {label} ... ")
    stream.flush()
    stop, drawn = threading.Event(), [0]  # drawn: the length of the count on the line
    counter = None
    if _is_terminal(stream):
        counter = threading.Thread(target=_count_seconds, args=(stream, t0, stop, drawn), daemon=True)
        counter.start()
    try:
        yield
    finally:
        stop.set()
        if counter is not None:
            counter.join()
        stream.write("\b" * drawn[0])  # the final figure over the count (it is longer than the count)
        d = {k: _totals[k] - before[k] for k in _totals}
        if d["compiles"] or d["hits"]:
            seconds = min(d["seconds"], time.perf_counter() - t0)  # parallel compiles overlap
            stream.write(describe(seconds, d["compiles"], d["slow"], d["hits"]) + "\n")
        else:
            stream.write(f"{time.perf_counter() - t0:.1f} s (compiled earlier in this process)\n")
        stream.flush()
