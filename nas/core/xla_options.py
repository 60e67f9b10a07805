"""Which XLA options the installed XLA knows, asked before one is used.

XLA renames and retires its debug options between releases: ``xla_cpu_use_fusion_emitters`` exists in
jaxlib 0.10 and is gone in 0.11, where naming it stops the process (an unknown flag in ``XLA_FLAGS`` is a
fatal error when the backend starts) or fails the compilation (an unknown ``compiler_options`` entry). The
library's speed options are hints, never requirements: each is used only where the installed XLA knows it,
and the numbers do not depend on it (the hooks in ``nas.core.searcher`` keep only options that leave every
history unchanged).
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys


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
