"""The compiled programs of a process: an LRU of jitted programs, compiled ahead, several at a time.

A run compiles its programs (an init program and one per distinct chunk shape, ``nas.engine.chunked_loop``)
before their first call: ``jit(f).lower(*args).compile()`` fills JAX's caches, so the call that follows
neither traces nor compiles again (``tests/test_compile_once.py`` counts one compile per program). The
arguments may be abstract (``jax.ShapeDtypeStruct`` with the sharding of the array that will come), so a
chunk program can compile before the init program that makes its state has run.

XLA spends most of a compile in one thread (its HLO passes; only the final LLVM code generation is
split over the cores), and ``Lowered.compile()`` releases the GIL. ``compile_ahead`` therefore lowers
its programs in the calling thread (tracing is Python) and hands each, once lowered, to a pool of
threads for XLA while the next one lowers. The default job's three chunk programs (random search,
regularized evolution, local search), lowered and then compiled in three threads, took 1.6-1.7 s of
wall time on the 2-core CPU instead of 2.2-2.3 s one after the other; the whole job went from 6.7 to
5.4-5.9 s (docs/reference/scaling.md, "The default job cold"). The executables are the same (XLA compiles each
program as it would alone; the run's numbers do not change). Threads: one per program, at most one per
core and at most ``MAX_THREADS`` on a CPU, one on a GPU or TPU (not measured there: XLA's autotuning
times kernels on the device); ``$NASJAX_COMPILE_THREADS`` sets the most (1: one program at a time).
Each compiling thread holds its own compiler memory (a large program's is ~0.7 GB on the CPU), so
parallel compiles raise the peak by that much per thread.
"""

from __future__ import annotations

import collections
import os
import sys
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import jax

from nas.engine.compile_notice import compile_notice
from nas.engine.compile_policy import prepare_compile
from nas.engine.compiler_memory import trim_after_compiles
from nas.engine.devices import cpu_cores

CACHE_SIZE = 64
MAX_THREADS = 4
THREADS_ENV = "NASJAX_COMPILE_THREADS"
_PROGRAMS: collections.OrderedDict = collections.OrderedDict()  # (searcher, what, length) -> jitted fn
_COMPILED: set = set()  # (program id, argument tree, argument shapes) compiled ahead
bar_open = [False]  # a progress bar is drawn on stderr's current line (chunked_loop.show_progress)


def cached_jit(searcher, what, length: int, make: Callable[[], Callable]) -> Callable:
    """The jitted function ``make()`` for ``(searcher, what, length)``, cached (LRU) across calls.

    Searchers compare by class, space and options (``nas.core.contract``), so a new searcher object with
    the same options reuses the jitted function and its compiled programs. The engine's lowering of
    JAX's random bits is installed before ``make()`` traces anything (``compile_policy.prepare_compile``).
    """
    prepare_compile()
    trim_after_compiles()  # the compiler's freed heap does not add to the run's peak memory
    key = (searcher, what, length)
    if key in _PROGRAMS:
        _PROGRAMS.move_to_end(key)
    else:
        _PROGRAMS[key] = make()
        if len(_PROGRAMS) > CACHE_SIZE:
            evicted = id(_PROGRAMS.popitem(last=False)[1])
            _COMPILED.difference_update({c for c in _COMPILED if c[0] == evicted})
    return _PROGRAMS[key]


def is_compiled(searcher, what, length: int) -> bool:
    """Whether this process holds the program ``(searcher, what, length)`` already."""
    return (searcher, what, length) in _PROGRAMS


class CompileThreadsError(ValueError):
    """A ``$NASJAX_COMPILE_THREADS`` that is not a whole number >= 1 (a command prints it as one config error)."""


def default_threads() -> int:
    """One per core, at most ``MAX_THREADS``, on a CPU; one elsewhere: a GPU compile times candidate kernels on
    the device (autotuning), and compiles side by side were not measured there."""
    return min(cpu_cores(), MAX_THREADS) if jax.default_backend() == "cpu" else 1


def whole_threads(text: str) -> int | None:
    """``text`` as a number of threads (a whole number >= 1), None when it is not one."""
    try:
        most = int(text)
    except ValueError:
        return None
    return most if most >= 1 else None


def threads_setting() -> int | None:
    """``$NASJAX_COMPILE_THREADS`` as a number, None when unset; a ``CompileThreadsError`` when it is not one."""
    text = os.environ.get(THREADS_ENV, "")
    if not text:
        return None
    most = whole_threads(text)
    if most is None:
        raise CompileThreadsError(
            f"${THREADS_ENV}={text!r} must be a whole number of threads >= 1 (1 = one program at a time); "
            "set it so or unset it"
        )
    return most


def compile_threads(programs: int) -> int:
    """Threads that compile ``programs`` programs at once: one each, at most ``default_threads()``
    (``$NASJAX_COMPILE_THREADS`` sets the most, on any backend)."""
    most = threads_setting() or default_threads()
    return max(1, min(programs, most))


def _signature(program: Callable, args: tuple) -> tuple:
    """What a compile ahead is keyed by: the program, the arguments' tree (static fields included) and shapes."""
    leaves, tree = jax.tree.flatten(args)  # the tree holds static fields (an objective's protocol, ...)
    shapes = tuple((getattr(x, "shape", None), str(getattr(x, "dtype", type(x)))) for x in leaves)
    return id(program), tree, shapes


def compile_ahead(programs: list[tuple[Callable, tuple]], label: str, notice: bool) -> None:
    """Compiles each ``(jitted function, example arguments)`` not compiled yet for arguments of these shapes
    (several at a time, module docstring), under one ``compiling <label> ...`` line when ``notice``. JAX
    keeps the executables, so the calls that follow run them without tracing or compiling again."""
    new, seen = [], set()
    for program, args in programs:
        key = _signature(program, args)
        if key not in _COMPILED and key not in seen:
            seen.add(key)
            new.append((program, args, key))
    if not new:
        return
    if notice and bar_open[0]:  # the notice goes on a line of its own
        sys.stderr.write("\n")
        bar_open[0] = False
    threads = compile_threads(len(new))
    with compile_notice(label, notice):
        if threads == 1:
            for program, args, _ in new:
                program.lower(*args).compile()
        else:  # each program goes to XLA as soon as it is lowered: the next one lowers meanwhile
            with ThreadPoolExecutor(threads, thread_name_prefix="nasjax-compile") as pool:
                futures = [pool.submit(program.lower(*args).compile) for program, args, _ in new]
                for future in futures:
                    future.result()  # a failed compile raises here
        _COMPILED.update(key for _, _, key in new)


def __getattr__(name: str):
    if name == "compiled":  # the 0.2 name: it returns a cached jit, not a compiled program
        warnings.warn(
            "nas.engine.program_cache.compiled is renamed cached_jit (the old name goes in nasjax 0.4)",
            DeprecationWarning,
            stacklevel=2,
        )
        return cached_jit
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
