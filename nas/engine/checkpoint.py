"""Checkpoints of a many-seed run: the whole run state as one ``.npz``, with the run's fingerprint.

The fingerprint says what the numbers mean: the searcher's identity (registry
name, space, options: ``Searcher.identity``), a CRC of the seed keys and any
extra text the caller adds (the objective and the config fields that change
results). It is built from values, never from object reprs, so a run resumes in
a new process. Writes are atomic (``spaces.files``).
"""

from __future__ import annotations

import json
import os
import zlib

import jax
import numpy as np

from spaces.data_files import DamagedFile, npz_arrays
from spaces.files import savez_atomic


class CheckpointError(ValueError):
    """A checkpoint that cannot be used; the message names the file and what to do."""


def key_crc(keys: jax.Array) -> int:
    """CRC32 of the raw key data (typed or legacy uint32 keys)."""
    if jax.dtypes.issubdtype(keys.dtype, jax.dtypes.prng_key):
        keys = jax.random.key_data(keys)
    return zlib.crc32(np.asarray(keys).tobytes())


def run_fingerprint(searcher, keys: jax.Array, extra: str = "") -> str:
    """Identifies a run: the searcher's identity, the seeds' keys and ``extra``."""
    run = {"searcher": json.loads(searcher.identity), "keys_crc": key_crc(keys), "extra": extra}
    return json.dumps(run, sort_keys=True)


def save(path: str, state, fingerprint: str) -> None:
    """Writes every leaf of ``state`` and the fingerprint atomically."""
    arrays = {f"leaf_{i:04d}": np.asarray(x) for i, x in enumerate(jax.tree.leaves(state))}
    arrays["fingerprint"] = np.asarray(fingerprint)
    savez_atomic(path, arrays)


def load(path: str, like, fingerprint: str):
    """The state saved at ``path`` in the structure of ``like``, or None when there is no file.

    Raises ``CheckpointError`` when the file belongs to another run or is
    unreadable (truncated, not an ``.npz``, leaves of the wrong shape).
    """
    if not os.path.exists(path):
        return None
    fix = f"delete {path} to start this searcher over (finished searchers are kept), or use a new workdir"
    try:
        arrays = npz_arrays(path)
    except DamagedFile as e:
        raise CheckpointError(f"checkpoint {path} is unreadable ({e.what}); {fix}") from e
    if "fingerprint" not in arrays:
        raise CheckpointError(f"checkpoint {path} is unreadable (it lacks the run's fingerprint); {fix}")
    saved = str(arrays["fingerprint"])
    if saved != fingerprint:
        raise CheckpointError(
            f"checkpoint {path} belongs to a different run (searcher options, seeds or benchmark differ).\n"
            f"  saved:   {saved}\n  current: {fingerprint}\n{fix[0].upper() + fix[1:]}."
        )
    leaves, treedef = jax.tree.flatten(like)
    absent = [i for i in range(len(leaves)) if f"leaf_{i:04d}" not in arrays]
    if absent:
        raise CheckpointError(f"checkpoint {path} is unreadable (it lacks leaf {absent[0]} of the run's "
                              f"{len(leaves)}); {fix}")  # fmt: skip
    loaded = [arrays[f"leaf_{i:04d}"] for i in range(len(leaves))]
    for i, (a, b) in enumerate(zip(loaded, leaves)):
        if a.shape != b.shape or a.dtype != b.dtype:
            raise CheckpointError(
                f"checkpoint {path}: leaf {i} is {a.shape}/{a.dtype}, expected {b.shape}/{b.dtype}; {fix}"
            )
    return jax.tree.unflatten(treedef, loaded)
