"""A call that refuses a study file changes no byte of it and creates nothing; a refused load releases its lock;
errors reading a study file name the file and what is wrong (nas/host/storage.py, study_base.py)."""

import os
import shutil
import sqlite3

import pytest

from nas.host.storage import StorageError
from nas.host.study import Study, load_study

SPACE = {"a": [0, 1, 2, 3], "b": [0, 1, 2, 3, 4]}
OPTS = dict(searcher="random_search", direction="minimize", seed=2, max_trials=6)


def objective(trial):
    return float(trial.params["a"] * 5 + trial.params["b"])


def journal(path, trials=3):
    """A finished journal of ``trials`` trials at ``path`` (closed)."""
    study = Study(SPACE, storage=str(path), **OPTS)
    study.optimize(objective, n_trials=trials)
    study.close()
    return study


def files_under(folder):
    return sorted(os.path.relpath(os.path.join(d, f), folder) for d, _, fs in os.walk(folder) for f in fs)


@pytest.mark.parametrize("spec", ["missing/study.jsonl", "sqlite:///missing/study.db", "study.jsonl"])
def test_a_load_of_a_path_that_does_not_exist_is_an_error_and_creates_nothing(tmp_path, monkeypatch, spec):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(StorageError, match="no such study file") as e:
        load_study(spec)
    assert "\n" not in str(e.value) and os.listdir(tmp_path) == []  # no file, no folder, no lock file


FOREIGN = {
    "csv": b"a,b\n1,2\n3,",  # no newline at the end: a loader that cut "last lines" would cut it
    "binary": bytes(range(256)) * 4 + b"\x00tail",
    "json_list": b"[1, 2, 3]\n",
    "text": b"hello\n",
    "one_line": b"a,b",  # no newline at all: not a record cut short, a file a study never wrote
    "records": b'{"event": "login", "user": "ada"}\n',  # JSON lines of something else
}


@pytest.mark.parametrize("kind", sorted(FOREIGN))
def test_a_foreign_file_is_refused_byte_for_byte_and_its_lock_released(tmp_path, kind):
    path = tmp_path / f"data.{kind}"
    path.write_bytes(FOREIGN[kind])
    for call in (lambda: Study.load(str(path)), lambda: Study(SPACE, storage=str(path), **OPTS)):
        with pytest.raises(StorageError) as e:
            call()
        assert str(e.value).startswith(str(path)) and "\n" not in str(e.value)
        assert path.read_bytes() == FOREIGN[kind]  # not one byte cut or added
    assert files_under(tmp_path) == [path.name]  # nothing created beside it (no trials folder, no lock file)
    good = tmp_path / "good.jsonl"
    reference = journal(good)
    shutil.copyfile(good, path)  # the file repaired: it loads in this same process (no lock was kept)
    loaded = Study.load(str(path), directory=str(tmp_path / "good_trials"))
    assert [t.params for t in loaded.trials] == [t.params for t in reference.trials]
    loaded.close()


def test_a_last_line_cut_by_a_kill_is_ignored_and_cut_when_the_study_writes(tmp_path):
    path = tmp_path / "study.jsonl"
    reference = journal(path, trials=2)
    whole = path.read_bytes()
    path.write_bytes(whole + b'{"event":"ask","num')  # a record cut short by SIGKILL
    loaded = Study.load(str(path), read_only=True)  # reading it changes nothing
    assert len(loaded.trials) == 2 and path.read_bytes().endswith(b'"num')
    loaded.close()
    loaded = Study.load(str(path))
    assert path.read_bytes().endswith(b'"num')  # a load alone writes nothing
    loaded.optimize(objective, n_trials=1)
    reference_next = Study.load(str(path), read_only=True)
    assert [t.params for t in reference_next.trials[:2]] == [t.params for t in reference.trials]
    assert len(reference_next.trials) == 3 and b'"num{' not in path.read_bytes()
    loaded.close()
    reference_next.close()


def test_a_refused_sqlite_load_adds_no_table_and_keeps_no_lock(tmp_path):
    db = tmp_path / "people.db"
    with sqlite3.connect(db) as c:
        c.execute("CREATE TABLE people (name TEXT)")
        c.execute("INSERT INTO people VALUES ('ada')")
    before = db.read_bytes()
    with pytest.raises(StorageError, match="holds no study") as e:
        load_study(f"sqlite:///{db}")
    assert str(e.value).startswith(str(db)) and db.read_bytes() == before
    assert files_under(tmp_path) == ["people.db"]
    with sqlite3.connect(db) as c:  # a foreign 'events' table: not a study's, refused untouched
        c.execute("CREATE TABLE events (id INTEGER, what TEXT, at REAL)")
    before = db.read_bytes()
    for call in (lambda: load_study(f"sqlite:///{db}"), lambda: Study(SPACE, storage=f"sqlite:///{db}", **OPTS)):
        with pytest.raises(StorageError, match="belongs to something else"):
            call()
        assert db.read_bytes() == before
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database at all " * 50)
    with pytest.raises(StorageError, match="not an SQLite database") as e:
        load_study(f"sqlite:///{garbage}")
    assert str(e.value).startswith(str(garbage)) and garbage.read_bytes() == b"not a database at all " * 50


def lines_of(path):
    return path.read_bytes().split(b"\n")[:-1]


@pytest.mark.parametrize(
    "damage, says",
    [
        (lambda ls: ls[1:], "holds no study"),  # the settings record deleted
        (lambda ls: ls[:1] + ls[2:], "record"),  # the first ask deleted: a tell of a trial never asked
        (lambda ls: ls[:3] + [b'{"event": "tell", "numb'] + ls[3:], "line 4: not a JSON record"),
        (lambda ls: ls[:2] + [b'{"event": "tell"}'] + ls[2:], "'tell' record does not replay"),
        (lambda ls: ls[:2] + [b'{"event": "dance"}'] + ls[2:], "unknown event"),
        (lambda ls: ls + ls[-1:], "told twice"),
        (lambda ls: ls[:-1] + [ls[-1].replace(b'"complete"', b'"exploded"', 1)], "the state 'exploded'"),
        (lambda ls: ls[:-1] + [ls[-1].replace(b'"value":', b'"value":"high","was":', 1)], "does not replay"),
        (lambda ls: [], "the file is empty"),
    ],
)
def test_a_damaged_journal_is_refused_in_one_line_naming_the_file(tmp_path, damage, says):
    path = tmp_path / "study.jsonl"
    journal(path)
    damaged = b"".join(line + b"\n" for line in damage(lines_of(path)))
    path.write_bytes(damaged)
    with pytest.raises(StorageError) as e:
        load_study(str(path))
    line = str(e.value)
    assert line.startswith(str(path)) and says in line and "\n" not in line
    assert path.read_bytes() == damaged
    load_fixed = tmp_path / "fixed.jsonl"  # the lock went with the refusal: the file opens again at once
    path.rename(load_fixed)
    with pytest.raises(StorageError):
        load_study(str(load_fixed))


def test_a_damaged_sqlite_row_names_the_file(tmp_path):
    url = f"sqlite:///{tmp_path}/study.db"
    journal(url)
    with sqlite3.connect(tmp_path / "study.db") as c:
        c.execute("UPDATE events SET record = 'garbage' WHERE id = 2")
    with pytest.raises(StorageError, match="event 2 .*not a study record") as e:
        load_study(url)
    assert str(e.value).startswith(str(tmp_path / "study.db"))


def test_a_setting_with_no_json_form_creates_no_file(tmp_path):
    path = tmp_path / "sub" / "study.jsonl"
    with pytest.raises(StorageError, match="is not plain data"):
        Study({"a": [object(), 1, 2]}, storage=str(path), **{**OPTS, "max_trials": 3})
    assert os.listdir(tmp_path) == []  # not the file, not its folder


def test_creating_a_study_on_an_existing_study_changes_nothing(tmp_path):
    path = tmp_path / "study.jsonl"
    journal(path)
    before = path.read_bytes()
    with pytest.raises(StorageError, match="already holds a study"):
        Study(SPACE, storage=str(path), **OPTS)
    assert path.read_bytes() == before
    Study.load(str(path)).close()  # and its lock was released
