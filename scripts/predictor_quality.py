"""Predictor quality of the MLP ensemble per encoding and training-set size (BANANAS Table 1).

    python -m scripts.predictor_quality --config configs/bananas_predictor.py:nb101 --out /tmp/pred_nb101.json

See the config's docstring for the protocol. Trials are vmapped: one compiled fit per
(training-set size, encoding). Prints a table (train / held-out MAE, mean +- standard error over
trials, percentage points of validation accuracy) and writes it as JSON with ``--out``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import time

import jax
import jax.numpy as jnp
import numpy as np

from spaces.benchmarks.registry import make_benchmark
from surrogates.mlp_ensemble import MLPEnsembleConfig, ensemble_mean_std, fit_ensemble, predict_ensemble


def load_config(spec: str):
    path, _, arg = spec.partition(":")
    mod_spec = importlib.util.spec_from_file_location("cfg", path)
    mod = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(mod)
    return mod.get_config(arg or None)


def table_tokens(bench) -> tuple[np.ndarray, np.ndarray]:
    """Every row's token string and seed-mean validation score."""
    space = bench.space
    if bench.row_ids.shape[0] == 0:  # dense grid: row = mixed-radix id
        card = np.asarray(space.cardinalities)
        radix = np.cumprod([1] + list(card[::-1]))[:-1][::-1]
        rows = np.arange(bench.size)
        toks = (rows[:, None] // radix[None, :]) % card[None, :]
    else:
        from spaces.nb101 import decode_code

        toks = np.stack([decode_code(int(c)) for c in np.asarray(bench.row_ids)])
    return toks.astype(np.int32), jnp.asarray(bench.mean_valid())


def run(config) -> list[dict]:
    bench = make_benchmark(config.benchmark)
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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", required=True, help="configs/bananas_predictor.py[:nb201|nb101]")
    ap.add_argument("--out", default="")
    ap.add_argument("--num_trials", type=int, default=0, help="override the config's trial count")
    args = ap.parse_args(argv)
    config = load_config(args.config)
    if args.num_trials:
        config.num_trials = args.num_trials
    rows = run(config)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
