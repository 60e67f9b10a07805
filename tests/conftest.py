"""Shared test helpers: where the public benchmark files live.

Files under ``../shared/data`` (next to the repository) come from public
repositories and are never committed; tests that need one skip with a message
naming the missing file. ``NAS_SHARED_DATA`` overrides the location.

The data directory that loaders search for optional files (``$NASJAX_DATA``,
``spaces.benchmarks.data_files``) points at a folder that does not exist, so a
developer's own data files never change what a test computes; tests of the
lookup set their own.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

# XLA's CPU backend spends most of this suite's time optimizing code that then runs for
# milliseconds (tiny budgets); at optimization level 0 programs compile ~7x faster, and XLA's
# older loop emitters (no MLIR fusion emitters) compile them in another ~40-60% less CPU time,
# with the same numbers (the golden digests of tests/mf_golden.py hold under both). Every
# comparison in the suite is between runs under the same flags (subprocesses inherit them).
# A flag already named in XLA_FLAGS keeps its value there. XLA retires options between releases
# (the emitters flag is gone in jaxlib 0.11, and an unknown flag ends the process), so each is
# asked for once, in a subprocess, before it is set; xdist workers inherit the answer.
_TEST_XLA_FLAGS = {"xla_backend_optimization_level": "0", "xla_cpu_use_fusion_emitters": "false"}
if not os.environ.get("NASJAX_TEST_XLA_FLAGS_SET"):
    from nas.engine.compile_policy import xla_flag_known

    _wanted = [f"--{n}={v}" for n, v in _TEST_XLA_FLAGS.items() if n not in os.environ.get("XLA_FLAGS", "")]
    if _wanted and not xla_flag_known(" ".join(_wanted)):  # one probe when all are known
        _wanted = [flag for flag in _wanted if xla_flag_known(flag)]
    os.environ["XLA_FLAGS"] = " ".join([os.environ.get("XLA_FLAGS", ""), *_wanted]).strip()
    os.environ["NASJAX_TEST_XLA_FLAGS_SET"] = "1"

os.environ["NASJAX_DATA"] = os.path.join(tempfile.gettempdir(), "nasjax-tests-no-data-directory")

SHARED_DATA = Path(os.environ.get("NAS_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


def shared_file(relpath: str) -> str:
    """Absolute path of ``../shared/data/<relpath>``; skips the test when absent."""
    path = SHARED_DATA / relpath
    if not path.exists():
        pytest.skip(f"benchmark file {path} is absent (public data expected in ../shared/data; see CONTRIBUTING.md)")
    return str(path)


@pytest.fixture
def nb201_test_csv() -> str:
    return shared_file("nb201/nats_bench_test_acc.csv")
