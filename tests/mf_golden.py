"""Digests of multi-fidelity histories produced by the code before ASHA was resized and successive halving
learnt best-first dispatch (main at ddd92ec), so that tests can show those changes keep every other history
bit for bit. A digest covers every finished row (tokens, fidelity, scores, charges, clock), in order.

They were produced under the suite's XLA flags (``tests/conftest.py``: optimization level 0) and hold with
XLA's CPU fusion emitters on and off. Only the multi-fidelity BANANAS's ensemble fits depend on the level:
its entry also holds the default level's digest."""

from __future__ import annotations

import hashlib

import numpy as np

FIELDS = ("tokens", "fidelity", "score", "report_score", "cost", "resource", "finish")

# (searcher, options) on tests/mf_tables.toy_table -> (digest, finished evaluations); the runs are named in
# the tests that check them
GOLDEN = {
    "hyperband": ("294de6da4d1e8c5a", 20),
    "asha": ("1d19b5693c79ebfb", 28),
    "bohb": ("7d9726f786ac4061", 20),
    "mf_bananas": ("6454edad956f9add", 20),  # at XLA's default optimization level: 59db69a5b2c7d752
    "mf_bananas-fidelity_feature": ("f5ef44874a76aedb", 20),
    "sh_q10": ("f7f0aba659c1193b", 48),  # promotion_order="start_order", one worker, seed 0
    "asha_iterations_w4": ("34c21c36abec9bc4", 44),  # anchor="max"
}
# ASHA (W = 4, 100 full trainings) on NAS-Bench-201 cifar10 at 12 and 200 epochs, the first 8 of the 500 keys
# jax.random.split(PRNGKey(0), 500) that scripts/bench/bench_multifidelity.py runs
NB201_ASHA_8_SEEDS = "ccfcc1c246dd08f5"


ALSO_ACCEPTED = {"mf_bananas": ("59db69a5b2c7d752", 20)}  # the same run compiled at the default level


def matches(case: str, got: tuple[str, int]) -> bool:
    """Whether a run's ``digest`` is the one the code gave before for ``case``."""
    return got == GOLDEN[case] or got == ALSO_ACCEPTED.get(case)


def digest(history) -> tuple[str, int]:
    """(sha256 prefix, finished evaluations) of one run's history (``MFHistory`` or dict of arrays)."""
    get = history.get if isinstance(history, dict) else lambda k: getattr(history, k)
    done = np.asarray(get("fidelity")) >= 0
    m = hashlib.sha256()
    for f in FIELDS:
        m.update(np.ascontiguousarray(np.asarray(get(f))[done]).tobytes())
    return m.hexdigest()[:16], int(done.sum())


def batch_digest(history) -> str:
    """One digest over a batch of runs (a leading seed axis), each run's finished rows in turn."""
    fid = np.asarray(history.fidelity)
    m = hashlib.sha256()
    for s in range(fid.shape[0]):
        done = fid[s] >= 0
        for f in FIELDS:
            m.update(np.ascontiguousarray(np.asarray(getattr(history, f))[s][done]).tobytes())
    return m.hexdigest()[:16]
