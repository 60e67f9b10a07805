"""A full disk is one line naming the path and saying that the run resumes; nothing written before is lost,
and the rerun ends with the numbers of an uninterrupted run."""

import errno
import json
import os

import numpy as np
import pytest

from configs import default
from nas.engine import chunked_loop
from nas.experiment import cli
from nas.experiment.run import run_experiment
from spaces import files
from spaces.files import DiskFullError


def tiny_config():
    config = default.get_config()
    config.num_trials, config.max_queries, config.report_every, config.chunk_steps = 2, 6, 3, 3
    config.only = "random_search"
    return config


def snapshot(wd):
    return {
        os.path.relpath(os.path.join(d, f), wd): open(os.path.join(d, f), "rb").read()
        for d, _, fs in os.walk(wd)
        for f in fs
        if f != ".lock"
    }


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT])
def test_a_full_disk_is_one_line_keeps_every_file_and_the_rerun_resumes(tmp_path, monkeypatch, capsys, code):
    run_experiment(tiny_config(), str(tmp_path / "ref"), progress=False)
    monkeypatch.setattr(chunked_loop, "CHECKPOINT_EVERY_S", 0.0)  # a checkpoint after every chunk but the last
    config = tiny_config()
    config.chunk_steps = 2  # three chunks: checkpoints after the first and the second
    wd = str(tmp_path / "wd")
    ckpt = os.path.join(wd, "ckpt", "random_search.npz")
    real_write, real_fsync, seen, before = files.atomic_write, os.fsync, [], {}

    def atomic_write(path, write):
        seen.append(os.fspath(path))
        return real_write(path, write)

    def fsync(fd):  # the disk fills up while the second chunk's checkpoint is written
        if seen[-1] == ckpt and seen.count(ckpt) == 2:
            before.update({k: v for k, v in snapshot(wd).items() if not k.endswith(".tmp")})
            raise OSError(code, os.strerror(code))
        return real_fsync(fd)

    monkeypatch.setattr(files, "atomic_write", atomic_write)
    monkeypatch.setattr(files.os, "fsync", fsync)
    status = cli.guarded(lambda argv: run_experiment(config, wd, progress=False))([])
    lines = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"disk full: {ckpt}: ")
    assert "intact" in lines[0] and "resumes" in lines[0]
    assert before and snapshot(wd) == before  # every file as it was, no temporary file left over
    monkeypatch.setattr(files.os, "fsync", real_fsync)
    run_experiment(config, wd, progress=False)  # resumes from the first chunk's checkpoint
    done, ref = (json.load(open(os.path.join(d, "summary.json"))) for d in (wd, tmp_path / "ref"))
    assert done["searchers"] == ref["searchers"]
    a, b = (np.load(os.path.join(d, "history", "random_search.npz")) for d in (wd, tmp_path / "ref"))
    assert all(np.array_equal(a[k], b[k]) for k in ("tokens", "score", "report_score", "cost"))
    steps = [json.loads(x)["step"] for x in open(os.path.join(wd, "metrics.jsonl"))]
    assert sorted(steps) == [2, 4, 6]  # every chunk's line once


def test_a_full_disk_anywhere_in_a_write_is_a_disk_full_error(tmp_path, monkeypatch, capsys):
    target = tmp_path / "x.txt"
    files.write_text_atomic(target, "old")

    def no_space(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files.tempfile, "mkstemp", no_space)  # not even a temporary file fits (no inodes)
    with pytest.raises(DiskFullError, match=r"x.txt: No space left on device; every file written before is intact"):
        files.write_text_atomic(target, "new")
    assert target.read_text() == "old" and os.listdir(tmp_path) == ["x.txt"]

    def make_folder(argv):  # a full disk outside the atomic writers (a folder, the lock): the same one line
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp_path / "wd"))

    assert cli.guarded(make_folder)([]) == 2
    assert capsys.readouterr().err.strip().startswith(f"disk full: {tmp_path / 'wd'}: No space left on device;")
