"""Predictor quality of the MLP ensemble per encoding and training-set size (BANANAS Table 1).

    python -m scripts.experiments.predictor_quality --config configs/bananas_predictor.py:nb101 \
        --config.data_path=../shared/data/nb101/data-1k.json --out /tmp/pred_nb101.json

Any config field can be overridden (``--config.num_trials=3``).

See the config's docstring for the protocol. Trials are vmapped: one compiled fit per
(training-set size, encoding). Prints a table (train / held-out MAE, mean +- standard error over
trials, percentage points of validation accuracy) and writes it as JSON with ``--out`` (atomically).
"""

from __future__ import annotations

import json
import time

import jax
import jax.numpy as jnp
import numpy as np
from absl import app, flags
from ml_collections import config_flags

from nas.experiment import cli
from spaces.benchmarks.registry import make_benchmark
from spaces.files import write_text_atomic
from surrogates.mlp_ensemble import MLPEnsembleConfig, ensemble_mean_std, fit_ensemble, predict_ensemble

_CONFIG = config_flags.DEFINE_config_file("config", None, "configs/bananas_predictor.py[:nb201|nb101]")
_OUT = flags.DEFINE_string("out", "", "Write the table as JSON here.")
flags.mark_flags_as_required(["config"])


def table_tokens(bench) -> tuple[np.ndarray, np.ndarray]:
    """Every row's token string and seed-mean validation score."""
    space = bench.space
    if bench.row_ids.shape[0] == 0:  # dense grid: row = mixed-radix id
        card = np.asarray(space.cardinalities)
        rows = np.arange(bench.size)
        toks = (rows[:, None] // space.grid_strides[None, :]) % card[None, :]
    else:
        from spaces.nb101 import decode_code

        toks = np.stack([decode_code(int(c)) for c in np.asarray(bench.row_ids)])
    return toks.astype(np.int32), jnp.asarray(bench.mean_valid())


def run(config) -> list[dict]:
    bench = make_benchmark(config.benchmark, **({"data_path": config.data_path} if config.data_path else {}))
    toks, y = table_tokens(bench)
    cfg = MLPEnsembleConfig(**dict(config.mlp))
    rng = np.random.default_rng(config.seed)
    rows = []
    for n in config.train_sizes:
        m = min(config.test_size, int(y.shape[0]) - n)
        perms = np.stack([rng.permutation(int(y.shape[0]))[: n + m] for _ in range(config.num_trials)])
        tr, te = perms[:, :n], perms[:, n:]
        for enc in config.encodings:
            feats = jax.jit(jax.vmap(lambda t, e=enc: bench.space.features(t, e)))(jnp.asarray(toks))

            def trial(key, tri, tei, feats=feats):
                params = fit_ensemble(key, feats[tri], y[tri], jnp.ones(tri.shape, bool), cfg)
                mtr, _ = ensemble_mean_std(predict_ensemble(params, feats[tri], cfg))
                mte, std = ensemble_mean_std(predict_ensemble(params, feats[tei], cfg))
                return jnp.mean(jnp.abs(mtr - y[tri])), jnp.mean(jnp.abs(mte - y[tei])), jnp.mean(std)

            t0 = time.perf_counter()
            keys = jax.random.split(jax.random.PRNGKey(config.seed + n), config.num_trials)
            a, b, s = (np.asarray(v) for v in jax.jit(jax.vmap(trial))(keys, jnp.asarray(tr), jnp.asarray(te)))
            se = lambda v: float(v.std(ddof=1) / np.sqrt(len(v))) if len(v) > 1 else 0.0  # noqa: E731
            row = {
                "benchmark": config.benchmark,
                "encoding": enc,
                "train_size": int(n),
                "test_size": int(m),
                "trials": int(config.num_trials),
                "train_mae": float(a.mean()),
                "train_mae_se": se(a),
                "test_mae": float(b.mean()),
                "test_mae_se": se(b),
                "mean_member_std": float(s.mean()),
                "seconds": round(time.perf_counter() - t0, 1),
            }
            rows.append(row)
            print(
                f"{config.benchmark:14s} {enc:10s} n={n:4d}: "
                f"train MAE {row['train_mae']:.3f} +- {row['train_mae_se']:.3f}"
                f"  held-out MAE {row['test_mae']:.3f} +- {row['test_mae_se']:.3f}  ({row['seconds']} s)",
                flush=True,
            )
    return rows


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    rows = run(_CONFIG.value)
    if _OUT.value:
        write_text_atomic(_OUT.value, json.dumps(rows, indent=1))


if __name__ == "__main__":
    cli.run(main)
