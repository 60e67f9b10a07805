"""How the engine compiles a searcher's programs: XLA options from the searcher's compile profile.

A searcher says what its steps are with one attribute, ``compile_profile`` (``nas.core.contract``); the
engine turns it into ``jax.jit(..., compiler_options=...)`` here, for the chunk programs
(``compiler_options``), the ``init`` program (``init_compiler_options``) and a Study's one-step programs
(``study_compiler_options``). The profiles (``PROFILES``):

- ``"default"``: XLA's defaults (level 3, the CPU's fusion emitters): steps that train a network or fit
  a surrogate, whose float arithmetic can round differently under other options.
- ``"compile_bound"``: XLA's backend optimization level 1. Gather- and compare-bound steps: LLVM's
  work, most of their compile time, halves while their run time barely moves (docs/dev/engine.md).
- ``"integer_steps"``: level 1 and, on a CPU, XLA's older loop emitters instead of its fusion emitters
  (``xla_cpu_use_fusion_emitters``): about 40 % less compile time, the same histories where a step is
  gathers, compares and integer arithmetic (``tests/test_compiler_hooks.py``).

A setting in ``XLA_FLAGS`` wins over the profile's. XLA renames and retires its debug options between
releases: ``xla_cpu_use_fusion_emitters`` exists in jaxlib 0.10 and is gone in 0.11, where naming it
stops the process (an unknown flag in ``XLA_FLAGS`` is a fatal error when the backend starts) or fails
the compilation (an unknown ``compiler_options`` entry). These options are hints, never requirements:
each is used only where the installed XLA knows it (``compile_option_known``, ``xla_flag_known``), and
the numbers do not depend on them (the profiles keep only options that leave every history unchanged).

On a CPU, a Study's one-step programs of an ``"integer_steps"`` searcher compile without XLA's
``while-loop-invariant-code-motion`` (``study_compiler_options``). That pass lifts what a loop body
computes the same way each round (the counters of its random draws) out of the loop, as separate small
kernels that are all ready when the program starts; XLA's CPU runtime hands a ready queue of more than 8
kernels to its thread pool, and in a step of ~100 us the hand-offs cost more than the kernels (regularized
evolution's ``ask``: 3 thread wake-ups per call, ~260 against ~130 us; the same proposals). It compiles in
~0.8 s more, once (the persistent cache keeps it).

``prepare_compile()`` installs the engine's CPU lowering of JAX's Threefry hash (``nas.core.threefry_cpu``:
the same bits, compiled faster) before a searcher program is traced; every function here calls it, so
asking for a program's options prepares its compile.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import warnings

from nas.core import threefry_cpu

LEVEL_FLAG, EMITTERS_FLAG = "xla_backend_optimization_level", "xla_cpu_use_fusion_emitters"
PASSES_FLAG, LOOP_HOISTING = "xla_disable_hlo_passes", "while-loop-invariant-code-motion"
# profile -> (XLA backend optimization level or None for XLA's default, CPU fusion emitters or None)
PROFILES: dict[str, tuple[int | None, bool | None]] = {
    "default": (None, None),
    "compile_bound": (1, None),
    "integer_steps": (1, False),
}


def prepare_compile() -> None:
    """Installs the CPU lowering of JAX's Threefry hash for the programs traced from now on (once)."""
    threefry_cpu.install()


@functools.cache
def compile_option_known(name: str, value: bool | int | str) -> bool:
    """Whether ``jax.jit(..., compiler_options={name: value})`` compiles on the default backend."""
    import jax

    try:
        jax.jit(lambda x: x + 1, compiler_options={name: value}).lower(1.0).compile()
    except Exception as e:  # XLA answers "No such compile option" (INVALID_ARGUMENT) for a retired option
        if "compile option" in str(e):
            return False
        raise
    return True


def xla_flag_known(flag: str) -> bool:
    """Whether a fresh process starts JAX's default backend with ``flag`` (``--name=value``) in ``XLA_FLAGS``.

    Asked in a subprocess, because XLA ends the process that names an unknown flag; about a second.
    """
    env = dict(os.environ, XLA_FLAGS=f"{os.environ.get('XLA_FLAGS', '')} {flag}".strip())
    probe = "import jax, jax.numpy as jnp; jnp.ones(1).block_until_ready()"
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=False)
    return done.returncode == 0


def profile_settings(searcher) -> tuple[int | None, bool | None]:
    """``(level, fusion emitters)`` of the searcher's ``compile_profile`` (None: XLA's default)."""
    legacy = [a for a in ("xla_optimization_level", "cpu_fusion_emitters") if hasattr(searcher, a)]
    if legacy:  # a searcher written against 0.2's two hooks: they still decide, for one release
        warnings.warn(
            f"{type(searcher).__name__} sets {' and '.join(legacy)}: set compile_profile to one of "
            f"{list(PROFILES)} instead (nas.engine.compile_policy; the old attributes go in nasjax 0.4)",
            DeprecationWarning,
            stacklevel=3,
        )
        return getattr(searcher, "xla_optimization_level", None), getattr(searcher, "cpu_fusion_emitters", None)
    profile = searcher.compile_profile
    if profile not in PROFILES:
        raise ValueError(f"{type(searcher).__name__}.compile_profile is {profile!r}: use one of {list(PROFILES)}")
    return PROFILES[profile]


def _cpu_option_free(flag: str) -> bool:
    """Whether the default backend is a CPU and ``XLA_FLAGS`` does not set ``flag`` (the user's flag wins)."""
    import jax

    return flag not in os.environ.get("XLA_FLAGS", "") and jax.default_backend() == "cpu"


def _cpu_emitters_option(on: bool) -> dict:
    """``{EMITTERS_FLAG: on}`` on a CPU whose XLA knows the option (retired after jaxlib 0.10) and where
    ``XLA_FLAGS`` does not set it (the user's flag wins); else nothing."""
    if not _cpu_option_free(EMITTERS_FLAG):
        return {}
    return {EMITTERS_FLAG: on} if compile_option_known(EMITTERS_FLAG, on) else {}


def compiler_options(searcher) -> dict | None:
    """Options for ``jax.jit(..., compiler_options=...)`` of the searcher's step programs (its profile)."""
    prepare_compile()
    level, emitters = profile_settings(searcher)
    opts = {}
    if level is not None and LEVEL_FLAG not in os.environ.get("XLA_FLAGS", ""):
        opts[LEVEL_FLAG] = int(level)
    if emitters is not None:
        opts.update(_cpu_emitters_option(bool(emitters)))
    return opts or None


def init_compiler_options(searcher) -> dict | None:
    """Options for the ``init`` program, compiled once and run once per run.

    A searcher with a light profile compiles its init at level 0. On a CPU every init compiles with XLA's
    loop emitters: an init is random draws and elementwise transforms of them, and with the fusion
    emitters LLVM unrolled the nested small loops of chained key derivations (``fold_in``, then ``split``,
    then a draw) into one kernel that took 11.6 s to compile for ReACTS (its whole init: 12.5 s against
    1.7 s). The initial state is the same bit for bit with either emitter for every registered searcher
    (``tests/test_compiler_hooks.py``, ``scripts.bench.bench_compile`` digests). A setting in ``XLA_FLAGS``
    wins.
    """
    opts = dict(compiler_options(searcher) or {})
    if opts:
        opts[LEVEL_FLAG] = 0
    opts.update(_cpu_emitters_option(False))
    return opts or None


def study_compiler_options(searcher) -> tuple[dict | None, dict]:
    """``(step options, init options)`` for a Study's one-step ``ask``/``tell`` programs and its ``init``.

    A Study runs each program for one step at a time, so a searcher whose profile lowers the level compiles
    them at level 0; its init always compiles at level 0 (it runs once). The steps of an ``"integer_steps"``
    searcher also compile without XLA's loop-invariant code motion (module docstring)."""
    opts = compiler_options(searcher)
    init = {**(opts or {}), LEVEL_FLAG: 0}
    settings = profile_settings(searcher)
    if settings[0] is not None:  # gather/compare-bound steps
        opts = {**(opts or {}), LEVEL_FLAG: 0}
    if settings == PROFILES["integer_steps"]:
        opts = {**(opts or {}), **_cpu_loop_hoisting_off()}
    return opts, init


def _cpu_loop_hoisting_off() -> dict:
    """``{PASSES_FLAG: LOOP_HOISTING}`` on a CPU where ``XLA_FLAGS`` does not list passes to skip (the user's
    list wins); else nothing (a GPU runs a loop's invariants once, outside it, and launches fewer kernels)."""
    return {PASSES_FLAG: LOOP_HOISTING} if _cpu_option_free(PASSES_FLAG) else {}
