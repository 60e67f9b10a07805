"""A training's state on disk, written atomically: what a promoted or restarted trial resumes from.

``save_state(folder, state, meta)`` writes every leaf of the pytree ``state`` (parameters, optimizer
state, ...) and the JSON-able ``meta`` (the step reached, the configuration, the seed: whatever says
which training this is and where it stands) to ``folder/state.npz``, through a temporary file that is
flushed to disk and renamed (``spaces.files``): a process killed while saving leaves the previous
checkpoint, never half of one. ``load_state(folder, like)`` reads it back into the structure of ``like``
(a state of the same shapes, e.g. a fresh one), checking every leaf's shape and dtype; None when the
folder holds no checkpoint. The bits are kept exactly (float32 stays float32), so a training resumed
from a checkpoint computes what the uninterrupted one computes.

A trial of a multi-fidelity study (``nas.host.job_driver``) saves into its own ``checkpoint_dir`` and a
promotion loads from its ``parent_checkpoint_dir`` (``latest_state``: its own folder first, where a
restarted trial has already got further).
"""

from __future__ import annotations

import json
import os

import jax
import numpy as np

from spaces.data_files import DamagedFile, npz_arrays
from spaces.files import DataError, savez_atomic

FILE = "state.npz"
FIX = "delete it to train from the start"


def save_state(folder: str, state, meta: dict) -> str:
    """Writes ``state``'s leaves and ``meta`` to ``folder/state.npz`` atomically; returns the path."""
    os.makedirs(folder, exist_ok=True)
    arrays = {f"leaf_{i:04d}": np.asarray(x) for i, x in enumerate(jax.tree.leaves(state))}
    arrays["meta"] = np.asarray(json.dumps(meta, sort_keys=True))
    path = os.path.join(folder, FILE)
    savez_atomic(path, arrays)
    return path


def load_state(folder: str | None, like) -> tuple | None:
    """``(state, meta)`` saved in ``folder``, in the structure of ``like``; None when there is none.

    A checkpoint that cannot be used (empty, cut short, garbled, of another training) is a ``DataError`` whose
    one line names the file, what is wrong with it and the fix: it is never silently skipped, since training
    from the start instead would spend the budget again without saying so."""
    path = os.path.join(folder, FILE) if folder else None
    if path is None or not os.path.exists(path):
        return None
    leaves, tree = jax.tree.flatten(like)
    try:
        arrays = npz_arrays(path)
    except DamagedFile as e:
        raise DataError(f"{path}: not a readable training checkpoint, {e.what}; {FIX}") from e
    try:
        meta = json.loads(str(arrays["meta"]))
    except (KeyError, ValueError) as e:
        what = "lacks its 'meta' record" if isinstance(e, KeyError) else f"its 'meta' record is not JSON ({e})"
        raise DataError(f"{path}: not a readable training checkpoint, {what}; {FIX}") from e
    if not isinstance(meta, dict):
        raise DataError(f"{path}: not a readable training checkpoint, its 'meta' record is a "
                        f"{type(meta).__name__}, not a JSON object; {FIX}")  # fmt: skip
    have = [k for k in arrays if k.startswith("leaf_")]
    if any(f"leaf_{i:04d}" not in arrays for i in range(len(leaves))):
        raise DataError(f"{path}: holds {len(have)} leaves, the training's state has {len(leaves)}; it belongs "
                        "to another training")  # fmt: skip
    saved = [arrays[f"leaf_{i:04d}"] for i in range(len(leaves))]
    for i, (a, b) in enumerate(zip(saved, leaves)):
        b = b if hasattr(b, "dtype") else np.asarray(b)  # arrays and ShapeDtypeStructs have shape and dtype
        shape, dtype = tuple(b.shape), np.dtype(b.dtype)
        if a.shape != shape or a.dtype != dtype:
            raise DataError(f"{path}: leaf {i} is {a.dtype}{list(a.shape)}, the training expects "
                            f"{dtype}{list(shape)}; it belongs to another training")  # fmt: skip
    extra = len(have) - len(leaves)
    if extra:
        raise DataError(f"{path}: {extra} leaves more than the training's state; it belongs to another training")
    return jax.tree.unflatten(tree, [jax.numpy.asarray(a) for a in saved]), meta


def latest_state(folders, like, accept) -> tuple | None:
    """The first ``(state, meta)`` in ``folders`` (None entries skipped) whose ``meta`` passes ``accept``."""
    for folder in folders:
        found = load_state(folder, like)
        if found is not None and accept(found[1]):
            return found
    return None
