"""Write-ahead: every ask, report and tell is checked in full and written to storage before the study, the pruner
or the searcher moves; a failed write (a full disk) leaves the study as it was, names the file and the cause,
and the study continues once the cause is gone. Read-only and moved studies (nas/host/study_base.py)."""

import errno
import os
import shutil
import sqlite3

import numpy as np
import pytest

import nas.host.storage as storage_module
from nas.host.storage import StorageError
from nas.host.study import Study, load_study
from nas.host.trials import BudgetSpent, NoTrialNow
from tests.mf_tables import BUDGETS, SPACE, score

SMALL = {"a": [0, 1, 2, 3], "b": [0, 1, 2, 3, 4]}
PRUNED = dict(searcher="random_search", direction="minimize", seed=4, max_trials=8, pruner="asha",
              fidelities=[1, 2, 4], batch_size=2)  # fmt: skip
MF = dict(searcher="successive_halving", direction="maximize", seed=1, max_resource=4 * BUDGETS[-1], fidelities=BUDGETS,
          workers=2)


def summary(study):
    return [(t.number, t.tokens.tolist(), t.state, t.value, t.cost, t.fidelity, t.parent,
             dict(t.intermediate_values)) for t in study.trials]  # fmt: skip


def snapshot(study):
    return summary(study), sorted(study._stopped), [t.number for t in study.pending()]


class FullDiskOnce:
    """Wraps a storage's append: every third write fails once with ENOSPC (the retry succeeds)."""

    def __init__(self, append):
        self.append, self.calls, self.failed = append, 0, 0

    def __call__(self, record):
        self.calls += 1
        if self.calls % 3 == 0:
            self.failed += 1
            raise OSError(errno.ENOSPC, "No space left on device")
        self.append(record)


def retrying(study, path, call):
    """``call()``; a failed write leaves the study as it was, and the same call then goes through."""
    before = snapshot(study)
    try:
        return call()
    except StorageError as e:
        assert str(e).startswith(str(path)) and "No space left on device" in str(e) and "\n" not in str(e)
        assert snapshot(study) == before  # nothing moved
        return call()


def run_pruned(study, path=None):
    """Asks, reports and tells a pruned single-fidelity study to the end of its budget (same calls each time)."""
    go = (lambda f: retrying(study, path, f)) if path is not None else (lambda f: f())
    while len(study.trials) < study.max_queries:
        batch = [go(study.ask) for _ in range(2)]
        for t in batch:
            value, pruned = None, False
            for step in (1, 2, 4):
                value = (t.params["a"] - 1.5) ** 2 + t.params["b"] / step
                if go(lambda t=t, step=step, value=value: study.report(t, step, value)):
                    pruned = True
                    break
            go(lambda t=t, v=value, p=pruned: study.tell(t, v, cost=1.0, state="pruned" if p else None))


def run_mf(study, path=None):
    """successive_halving asked and told in an interleaved order, with refusals (no_trial records)."""
    go = (lambda f: retrying(study, path, f)) if path is not None else (lambda f: f())
    out = []

    def tell_oldest():
        t = out.pop(0)
        go(lambda: study.tell(t, score(tuple(t.tokens.tolist()), t.budget), cost=0.5))

    for _ in range(200):
        try:
            out.append(go(study.ask))
        except NoTrialNow:  # a synchronous rung waits for its last results
            tell_oldest()
            continue
        except BudgetSpent:
            break
        if len(out) >= 2:
            tell_oldest()
    while out:
        tell_oldest()


@pytest.mark.parametrize("space, options, run", [(SMALL, PRUNED, run_pruned), (SPACE, MF, run_mf)],
                         ids=["batches_and_a_pruner", "multi_fidelity_jobs"])  # fmt: skip
@pytest.mark.parametrize("url", [False, True], ids=["journal", "sqlite"])
def test_a_failed_write_changes_nothing_and_the_study_continues(tmp_path, space, options, run, url):
    path = tmp_path / ("study.db" if url else "study.jsonl")
    spec = f"sqlite:///{path}" if url else str(path)
    reference = Study(space, **options)
    run(reference)
    study = Study(space, storage=spec, **options)
    flaky = FullDiskOnce(study._storage.append)
    study._storage.append = flaky  # the disk fills up now and then, and space is freed at once
    run(study, path)
    assert flaky.failed >= 3
    assert summary(study) == summary(reference)  # nothing lost, nothing repeated: decided as without a failure
    study.close()
    loaded = load_study(spec)  # the journal reads back as a study that never failed
    assert summary(loaded) == summary(study)
    loaded.close()


def test_optimize_stops_at_a_failed_write_and_goes_on_once_it_is_gone(tmp_path):
    path = tmp_path / "study.jsonl"
    options = dict(searcher="asha", seed=0, max_resource=3 * 9, fidelities=[1, 3, 9])

    def training(trial):
        return float(trial.params["a"] + trial.budget)

    reference = Study(SMALL, **options)
    reference.optimize(training)
    study = Study(SMALL, storage=str(path), **options)
    study._storage.append = FullDiskOnce(study._storage.append)
    for _ in range(60):  # each refusal at once (no spin), and the next optimize goes on from there
        try:
            study.optimize(training)
            break
        except StorageError as e:
            assert str(e).startswith(str(path)) and "No space left on device" in str(e)
    without_cost = lambda s: [row[:4] + row[5:] for row in summary(s)]  # noqa: E731 - the costs are wall times
    assert without_cost(study) == without_cost(reference) and study._storage.append.failed >= 3
    study.close()
    loaded = load_study(str(path))
    assert without_cost(loaded) == without_cost(reference)
    loaded.close()


def test_a_failed_rewrite_of_the_settings_is_written_before_the_next_record(tmp_path):
    path = tmp_path / "study.jsonl"
    study = Study(SMALL, storage=str(path), searcher="random_search", seed=0, max_trials=8)
    reset, calls = study._storage.reset, []

    def full_once(record):
        calls.append(record)
        if len(calls) == 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        reset(record)

    study._storage.reset = full_once
    with pytest.raises(StorageError, match="No space left on device"):
        study.optimize(lambda t: float(t.params["a"]), n_trials=0, batch_size=4)  # the searcher rebuilt: batches of 4
    study.optimize(lambda t: float(t.params["a"]), n_trials=4)
    study.close()
    loaded = load_study(str(path))
    assert loaded.batch_size == 4 and summary(loaded) == summary(study) and len(calls) == 2
    loaded.close()


def test_a_write_error_of_any_storage_object_is_one_line(tmp_path):
    path = tmp_path / "study.jsonl"
    study = Study(SMALL, storage=str(path), searcher="random_search", seed=0, max_trials=4)
    t = study.ask()

    def read_only(record):
        raise OSError(errno.EROFS, "Read-only file system")

    study._storage.append = read_only
    with pytest.raises(StorageError, match=r"study.jsonl: the study's record could not be written \(Read-only file"):
        study.tell(t, 1.0)
    assert t.state == "pending" and study.pending() == [t]
    study.close()


def test_a_bad_cost_is_refused_before_the_searcher_or_the_trial_moves(tmp_path):
    path = tmp_path / "study.jsonl"
    study = Study(SMALL, storage=str(path), searcher="random_search", seed=0, max_trials=4)
    t = study.ask()
    for cost, error in (("abc", TypeError), (float("nan"), ValueError), (float("inf"), ValueError),
                        (-1.0, ValueError)):  # fmt: skip
        with pytest.raises(error, match="the cost of trial 0") as e:
            study.tell(t, 0.5, cost=cost)
        assert "\n" not in str(e.value) and t.state == "pending" and t.value is None
    study.tell(t, 0.5, cost=2.0)
    study.ask()
    study.close()
    loaded = load_study(str(path))  # readable: the refused calls wrote nothing
    assert summary(loaded) == summary(study)
    loaded.close()


def test_a_read_only_study_loads_for_reading_and_refuses_to_continue(tmp_path, monkeypatch):
    path = tmp_path / "study.jsonl"
    study = Study(SMALL, storage=str(path), searcher="random_search", direction="minimize", seed=0, max_trials=6)
    study.optimize(lambda t: t.params["a"] + t.params["b"] / 10, n_trials=3)
    pending = study.ask()
    before = path.read_bytes()
    reader = load_study(str(path), read_only=True)  # no lock: it reads beside the writer
    assert summary(reader) == summary(study) and reader.best_value == study.best_value
    assert len(reader.trials_dataframe()) == 4
    for call in (reader.ask, lambda: reader.tell(pending.number, 1.0), lambda: reader.report(pending.number, 1, 2.0),
                 lambda: reader.optimize(lambda t: 0.0)):  # fmt: skip
        with pytest.raises(StorageError, match="is read-only .*cannot continue there; copy the file") as e:
            call()
        assert str(e.value).startswith(str(path))
    assert summary(reader) == summary(study) and path.read_bytes() == before
    reader.close()
    study.close()
    real_open = open

    def on_read_only_media(file, mode="r", *args, **kwargs):
        if os.fspath(file) == str(path) and mode != "rb":
            raise OSError(errno.EROFS, "Read-only file system", str(file))
        return real_open(file, mode, *args, **kwargs)

    shutil.rmtree(tmp_path / "study_trials")  # read-only media: no folder may be made either
    monkeypatch.setattr(storage_module, "open", on_read_only_media, raising=False)
    found = load_study(str(path))
    assert summary(found) == summary(study) and not (tmp_path / "study_trials").exists()
    with pytest.raises(StorageError, match=r"is read-only \(Read-only file system\)"):
        found.tell(pending.number, 1.0)
    found.close()


def test_a_read_only_sqlite_study_loads_for_reading(tmp_path):
    url = f"sqlite:///{tmp_path}/study.db"
    study = Study(SMALL, storage=url, searcher="random_search", seed=0, max_trials=4)
    study.optimize(lambda t: float(t.params["a"]), n_trials=2)
    study.close()
    before = (tmp_path / "study.db").read_bytes()
    reader = load_study(url, read_only=True)
    assert summary(reader) == summary(study)
    with pytest.raises(StorageError, match="read-only"):
        reader.ask()
    reader.close()
    assert (tmp_path / "study.db").read_bytes() == before
    with sqlite3.connect(tmp_path / "study.db") as c:
        assert [r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type='table'")][0] == "events"


def test_a_moved_study_finds_its_checkpoints_next_to_its_storage(tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    study = Study(SPACE, storage=str(old / "study.jsonl"), **{**MF, "searcher": "asha"})
    for _ in range(8):
        study.tell(study.ask(), 1.0)
    promoted = study.ask()
    assert promoted.parent is not None or any(t.parent is not None for t in study.trials)
    study.close()
    shutil.move(str(old), str(new))
    loaded = load_study(str(new / "study.jsonl"))
    assert loaded.directory == str(new / "study_trials") and not old.exists()  # the old folder is not made again
    for t in loaded.trials:
        assert t.checkpoint_dir.startswith(str(new))
        assert t.parent_checkpoint_dir is None or t.parent_checkpoint_dir.startswith(str(new))
    loaded.tell(loaded.pending()[0], 2.0)
    assert os.path.isdir(loaded.ask().checkpoint_dir) and not old.exists()
    loaded.close()


def test_a_moved_study_whose_folder_stayed_behind_is_refused_with_the_fix(tmp_path):
    ckpts = tmp_path / "checkpoints"
    study = Study(SMALL, storage=str(tmp_path / "a" / "study.jsonl"), directory=str(ckpts), searcher="random_search",
                  seed=0, max_trials=4)  # fmt: skip
    study.tell(study.ask(), 1.0)
    study.close()
    shutil.move(str(tmp_path / "a"), str(tmp_path / "b"))
    shutil.move(str(ckpts), str(tmp_path / "elsewhere"))
    with pytest.raises(StorageError, match=r"checkpoint folder .*checkpoints is gone .*directory=\.\.\.") as e:
        load_study(str(tmp_path / "b" / "study.jsonl"))
    assert "\n" not in str(e.value) and not ckpts.exists()
    loaded = load_study(str(tmp_path / "b" / "study.jsonl"), directory=str(tmp_path / "elsewhere"))
    assert loaded.trials[0].checkpoint_dir == str(tmp_path / "elsewhere" / "trial_00000")
    assert load_study(str(tmp_path / "b" / "study.jsonl"), read_only=True).trials[0].state == "complete"
    loaded.close()
    assert np.isfinite(loaded.best_value)


FILE_SIZE_LIMIT = """
import os, resource, signal, sys
from nas.host.storage import StorageError
from nas.host.study import Study, load_study
path = sys.argv[1]
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG, as on a full disk
opts = dict(searcher="regularized_evolution", seed=0, max_trials=10, population_size=4, tournament_size=2)
fn = lambda t: float(t.params["a"] * 5 + t.params["b"])
study = Study({"a": [0, 1, 2, 3], "b": [0, 1, 2, 3, 4]}, storage=path, **opts)
study.optimize(fn, n_trials=3)
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (os.path.getsize(path) + 150, hard))
try:
    study.optimize(fn)
except StorageError as e:
    print("REFUSED", e)
resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))  # space freed
study.optimize(fn)
reference = Study({"a": [0, 1, 2, 3], "b": [0, 1, 2, 3, 4]}, **opts)
reference.optimize(fn)
study.close()
loaded = load_study(path)
same = lambda s: [(t.number, t.tokens.tolist(), t.state, t.value) for t in s.trials]
print("SAME", same(study) == same(reference) == same(loaded))
"""


def test_a_real_failed_write_past_a_file_size_limit_keeps_the_journal_whole(tmp_path):
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    path = tmp_path / "study.jsonl"
    out = subprocess.run([sys.executable, "-c", FILE_SIZE_LIMIT, str(path)], env=env, capture_output=True, text=True,
                         timeout=300)  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    assert f"REFUSED {path}: the study's record could not be written (File too large)" in out.stdout
    assert "SAME True" in out.stdout
