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
import zipfile

import jax.numpy as jnp
import numpy as np
from flax import traverse_util

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


def load_params(path: str) -> tuple[dict, DeepKernelConfig, dict, np.ndarray, int]:
    """(w, model config, meta, init_tokens, step); ``DataError`` naming the file and the fix when unreadable."""
    fix = "write it with `python -m scripts.meta_train --config configs/nb201_tnas.py:<target> --workdir W`"
    if not os.path.isfile(path):
        raise DataError(f"TNAS parameters file not found: {path}; {fix}")
    try:
        with np.load(path, allow_pickle=False) as f:
            flat = {k[2:]: jnp.asarray(f[k]) for k in f.files if k.startswith("w/")}
            model = DeepKernelConfig(**json.loads(str(f["model"])))
            meta = json.loads(str(f["meta"]))
            init_tokens, step = np.asarray(f["init_tokens"], np.int32), int(f["opt_step"])
    except (OSError, KeyError, ValueError, TypeError, zipfile.BadZipFile) as e:
        raise DataError(f"{path}: not a TNAS parameters file ({e}); {fix}") from e
    if not flat:
        raise DataError(f"{path}: holds no parameters; {fix}")
    return traverse_util.unflatten_dict(flat, sep="/"), model, meta, init_tokens, step
