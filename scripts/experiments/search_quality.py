"""Search-quality checks on NAS-Bench-201 cifar10: does a searcher beat random search?

Experiment-scale statistical checks (many seeds x 150 queries each) that are too
slow for the test suite. Each check runs both searchers on the same seeds in one
compiled call, prints the mean incumbent metric of each and a Welch t statistic,
and exits with status 1 when a check fails.

    python -m scripts.experiments.search_quality                                   # both checks
    python -m scripts.experiments.search_quality --checks=bananas --seeds=24 \\
        --test_data=../shared/data/nb201/nats_bench_test_acc.csv

Checks:
- ``remaade``: ReMAADE (paper defaults) vs random search (batch 30), best seed-mean
  validation accuracy after 150 queries; passes when t > 3 (one-sided p < 0.002).
- ``bananas``: BANANAS (defaults, 50 ensemble epochs) vs random search, test error of
  the incumbent when ``--test_data`` is given (else validation error); passes when z > 2.5.
- ``nasbot``: NASBOT (defaults) vs random search, the same measure and threshold as ``bananas``
  (its compile alone takes minutes at XLA's default level: not a test-suite check).
"""

from __future__ import annotations

import sys
import time

import jax
import numpy as np
from absl import app, flags

from nas.experiment import cli

_CHECKS = flags.DEFINE_list("checks", ["remaade", "bananas"], "Which checks to run.")
_SEEDS = flags.DEFINE_integer("seeds", 0, "Seeds per searcher (0 = each check's default: 256 / 24 / 24).")
_TEST_DATA = flags.DEFINE_string("test_data", "", "NAS-Bench-201 test-accuracy CSV (optional).")

CHECKS = {
    # name: (searcher options, random-search options, default seeds, threshold, key)
    "remaade": ({}, {"batch_size": 30}, 256, 3.0, 42),
    "bananas": ({"epochs": 50}, {}, 24, 2.5, 2026),
    "nasbot": ({}, {}, 24, 2.5, 11),
}


def welch_t(a: np.ndarray, b: np.ndarray) -> float:
    return float((a.mean() - b.mean()) / np.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b)))


def final_incumbents(name, options, bench, keys):
    from nas.engine.incumbent import incumbent_curve
    from nas.engine.runner import make_search
    from nas.searchers import make_searcher

    s = make_searcher(name, bench.space, max_queries=150, **options)
    hist = jax.jit(jax.vmap(make_search(s), in_axes=(0, None)))(keys, bench)
    best, reported = incumbent_curve(hist.score, hist.report_score)
    return np.asarray(best[:, -1]), np.asarray(reported[:, -1])


def main(argv):
    del argv
    from spaces.benchmarks.registry import make_benchmark

    bench = make_benchmark("nb201/cifar10", **({"test_csv": _TEST_DATA.value} if _TEST_DATA.value else {}))
    unknown = set(_CHECKS.value) - set(CHECKS)
    if unknown:
        raise app.UsageError(f"unknown checks {sorted(unknown)}; choose from {sorted(CHECKS)}")
    failed = []
    for check in _CHECKS.value:
        options, rs_options, seeds, threshold, seed = CHECKS[check]
        seeds = _SEEDS.value or seeds
        keys = jax.random.split(jax.random.PRNGKey(seed), seeds)
        t0 = time.time()
        (v_s, r_s), (v_r, r_r) = (
            final_incumbents(check, options, bench, keys),
            final_incumbents("random_search", rs_options, bench, keys),
        )
        # remaade: validation accuracy (higher is better); bananas, nasbot: reported error (lower is better)
        a, b = (v_s, v_r) if check == "remaade" else (bench.report(r_r), bench.report(r_s))
        t = welch_t(a, b)
        what = "best validation score" if check == "remaade" else bench.report_name
        mean_s, mean_r = (a.mean(), b.mean()) if check == "remaade" else (b.mean(), a.mean())
        ok = t > threshold
        print(
            f"{check} vs random_search, {seeds} seeds x 150 queries, {what}: {mean_s:.4f} vs {mean_r:.4f}, "
            f"t = {t:.2f} (needs > {threshold}) {'PASS' if ok else 'FAIL'} [{time.time() - t0:.0f} s]"
        )
        if not ok:
            failed.append(check)
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    cli.run(main)
