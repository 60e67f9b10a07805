"""The meta-learned parameters file of TNAS: what ``scripts.meta_train`` writes and the ``tnas`` searcher reads.

One ``.npz`` (written atomically, ``spaces.files.savez_atomic``) with

- ``w/<path>``: every leaf of the deep kernel's parameters ``w`` (``surrogates.deep_kernel``);
- ``model``: the ``DeepKernelConfig`` as JSON (the searcher rebuilds the network from it);
- ``meta``: JSON with the space, the source tasks, the target left out, the outer steps done and the
  REPTILE settings;
- ``init_tokens``: int32[k, N], the strings with the best mean standardized validation score over the
  source tasks (TNAS's initial design, Appendix C: "we evaluate the top-5 architectures from the
  meta-training set");
- ``opt_step`` (and, in checkpoints, the meta-training key): where a resumed run continues.
"""

from __future__ import annotations

import dataclasses
import json
import os

import jax.numpy as jnp
import numpy as np
from flax import traverse_util

from spaces.data_files import data_errors, read_npz
from spaces.files import DataError, savez_atomic
from surrogates.deep_kernel import DeepKernelConfig


def save_params(path: str, w: dict, model: DeepKernelConfig, meta: dict, init_tokens: np.ndarray, step: int) -> None:
    flat = traverse_util.flatten_dict(jax_to_numpy(w), sep="/")
    arrays = {f"w/{k}": v for k, v in flat.items()}
    arrays["model"] = np.asarray(json.dumps(dataclasses.asdict(model)))
    arrays["meta"] = np.asarray(json.dumps(meta, sort_keys=True))
    arrays["init_tokens"] = np.asarray(init_tokens, np.int32)
    arrays["opt_step"] = np.asarray(step, np.int64)
    savez_atomic(path, arrays)


def jax_to_numpy(tree):
    if isinstance(tree, dict):
        return {k: jax_to_numpy(v) for k, v in tree.items()}
    return np.asarray(tree)


FIX = "write it with `python -m scripts.meta_train --config configs/nb201_tnas.py:<target> --workdir W`"


def load_params(path: str, finished: bool = False) -> tuple[dict, DeepKernelConfig, dict, np.ndarray, int]:
    """(w, model config, meta, init_tokens, step); ``DataError`` naming the file and the fix when unreadable,
    when a parameter is not finite, or (``finished``: for use by a searcher) when meta-training has not
    reached its ``outer_steps`` (an interrupted or diverged run)."""
    if not os.path.isfile(path):
        raise DataError(f"TNAS parameters file not found: {path}; {FIX}")
    arrays = read_npz(path, FIX, ("model", "meta", "init_tokens", "opt_step"))
    with data_errors(path, FIX):
        flat = {k[2:]: v for k, v in arrays.items() if k.startswith("w/")}
        model = DeepKernelConfig(**json.loads(str(arrays["model"])))
        meta = dict(json.loads(str(arrays["meta"])))
        init_tokens, step = np.asarray(arrays["init_tokens"], np.int32), int(arrays["opt_step"])
        outer_steps = int(meta.get("outer_steps", step))
    if not flat:
        raise DataError(f"{path}: holds no parameters; {FIX}")
    bad = [k for k, v in flat.items() if v.dtype.kind != "f" or not np.all(np.isfinite(v))]
    if bad:
        raise DataError(f"{path}: parameter {bad[0]!r} is not finite (a diverged meta-training); {FIX}")
    if finished and step < outer_steps:
        raise DataError(
            f"{path}: meta-training stopped at outer step {step} of {outer_steps} (interrupted or diverged); "
            "finish it by rerunning scripts.meta_train with the same --workdir"
        )
    w = traverse_util.unflatten_dict({k: jnp.asarray(v) for k, v in flat.items()}, sep="/")
    return w, model, meta, init_tokens, step


def check_shapes(path: str, w: dict, expected: dict) -> None:
    """``DataError`` unless ``w`` has exactly the leaves of ``expected`` (shapes of the model the file names)."""
    have = {k: tuple(v.shape) for k, v in traverse_util.flatten_dict(w, sep="/").items()}
    want = {k: tuple(v.shape) for k, v in traverse_util.flatten_dict(expected, sep="/").items()}
    diff = sorted(k for k in set(have) | set(want) if have.get(k) != want.get(k))
    if diff:
        k = diff[0]
        raise DataError(
            f"{path}: parameter {k!r} has shape {have.get(k, 'absent')}, its model needs {want.get(k, 'none')} "
            f"({len(diff)} parameter(s) differ; a file of another model or space); {FIX}"
        )
