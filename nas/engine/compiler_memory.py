"""Hand the XLA compiler's freed memory back to the operating system after each compilation.

Compiling a large program (ReACTS' chunk: an ensemble fit, rollouts and PPO in one XLA module)
allocates ~0.7 GB of compiler heap on the CPU client. The compiler frees it when it is done, but
glibc keeps the freed pages in its per-thread arenas, and the program's own buffers (one large
``mmap`` per execution) cannot reuse them: the process' peak memory becomes compiler heap +
run-time buffers. ``malloc_trim(0)`` after each backend compilation returns those pages (ReACTS,
500 seeds, ``scripts/bench/bench_policies.py``: peak RSS 2.15 GB -> 1.55 GB). A no-op where the C library
has no ``malloc_trim`` (macOS, musl).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

import jax

BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"  # jax._src.dispatch.BACKEND_COMPILE_EVENT


@functools.cache
def _malloc_trim():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim
    except (OSError, AttributeError):
        return None


def release_freed_memory() -> bool:
    """``malloc_trim(0)``: True when the C library returned memory to the system."""
    trim = _malloc_trim()
    return bool(trim(0)) if trim is not None else False


@functools.cache
def trim_after_compiles() -> None:
    """Registers (once per process) a listener that releases freed memory after every XLA compilation."""
    if _malloc_trim() is None:
        return

    def listener(event: str, duration: float, **_) -> None:
        del duration
        if event == BACKEND_COMPILE_EVENT:
            release_freed_memory()

    jax.monitoring.register_event_duration_secs_listener(listener)
