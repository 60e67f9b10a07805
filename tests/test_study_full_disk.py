"""A study whose journal sits on a small tmpfs that fills up: each failed write is one line naming the journal
and the cause, optimize stops at once (no spin), nothing told is lost, and once space is freed the study goes
on and ends as a study that never failed (the same trials, and a journal that loads to them)."""

import json
import os
import shutil
import subprocess
import time

import pytest

from nas.host.storage import StorageError
from nas.host.study import Study, load_study

SPACE = {"a": [0, 1, 2, 3], "b": [0, 1, 2, 3, 4]}
OPTIONS = dict(searcher="asha", seed=0, max_resource=3 * 9, fidelities=[1, 3, 9])


def training(trial):
    return float(trial.params["a"] + trial.params["b"] + trial.budget)


def told(study):
    return [(t.number, t.tokens.tolist(), t.state, t.value, t.fidelity, t.parent) for t in study.trials]


@pytest.fixture
def small_tmpfs(tmp_path):
    """A 64 KiB tmpfs (root and mount(8) needed: the test skips, saying so, where they are not)."""
    where = tmp_path / "disk"
    where.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root and mount(8)")
    out = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(where)], capture_output=True,
                         text=True)  # fmt: skip
    if out.returncode != 0:
        pytest.skip(f"this machine refuses to mount a tmpfs: {out.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(folder) -> str:
    """Writes a file that takes every free byte of ``folder``'s file system; its path."""
    path = os.path.join(folder, "filler")
    with open(path, "wb", buffering=0) as f:  # unbuffered: the write that finds the disk full is the one refused
        try:
            while True:
                f.write(b"\0" * 512)
        except OSError:
            pass
    return path


def test_a_study_on_a_full_tmpfs_stops_names_the_journal_and_goes_on_once_space_is_freed(small_tmpfs):
    reference = Study(SPACE, **OPTIONS)
    reference.optimize(training)
    path = os.path.join(small_tmpfs, "study.jsonl")
    study = Study(SPACE, storage=path, **OPTIONS)
    study.optimize(training, n_trials=2)
    filler = fill(small_tmpfs)  # the journal's last page still has room: the study fills it, then fails
    start = time.monotonic()
    with pytest.raises(StorageError) as e:
        study.optimize(training)
    assert time.monotonic() - start < 30  # it stops at the failed write: no spin
    line = str(e.value)
    assert line.startswith(path) and "No space left on device" in line and "\n" not in line
    with open(path, "rb") as f:  # what the journal holds: every whole record, and the study told no more
        records = [json.loads(line) for line in f.read().split(b"\n") if line.strip()]
    in_file = sorted(r["number"] for r in records if r["event"] == "tell")
    assert in_file == sorted(t.number for t in study.trials if t.state != "pending") and len(in_file) >= 2
    os.remove(filler)
    study.optimize(training)  # the cause is gone: the study goes on from where it stopped
    assert told(study) == told(reference)
    study.close()
    loaded = load_study(path)
    assert told(loaded) == told(reference)
    loaded.close()
