"""Shared test helpers: where the public benchmark files live.

Files under ``../shared/data`` (next to the repository) come from public
repositories and are never committed; tests that need one skip with a message
naming the missing file. ``NAS_SHARED_DATA`` overrides the location.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED_DATA = Path(os.environ.get("NAS_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


def shared_file(relpath: str) -> str:
    """Absolute path of ``../shared/data/<relpath>``; skips the test when absent."""
    path = SHARED_DATA / relpath
    if not path.exists():
        pytest.skip(f"benchmark file {path} is absent (public data expected in ../shared/data; see README)")
    return str(path)


@pytest.fixture
def nb201_test_csv() -> str:
    return shared_file("nb201/nats_bench_test_acc.csv")
