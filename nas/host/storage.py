"""Where a Study keeps its history: an append-only journal file, or SQLite.

A study's storage holds one record per event, in the order they happened: the study's settings
first (``"study"``: its space as its declaration, its searcher's name and options, as JSON data:
``nas.host.study_record``), then every ``ask`` (the trial's number and tokens, its budget and parent),
``no_trial`` (an ask the searcher refused: it may change the searcher's state), ``report`` (an
intermediate value and the pruner's decision) and ``tell`` (state, value, cost, times).
``Study.load(path)`` replays these records through the same compiled ``ask``/``tell`` (checking every
trial's tokens) and continues where the study stopped. Every record is JSON: a study file is data,
and opening one runs no code from it.

- ``JournalStorage("study.jsonl")``: JSON lines; each record is written and ``fsync``'d before the
  study goes on, so a process killed at any point (even ``SIGKILL``) leaves every finished event on disk.
  A last line cut short by the kill is ignored (and cut off when the study reopens the file).
- ``SQLiteStorage("sqlite:///path.db")`` (stdlib ``sqlite3``): one row per event, committed at once.

One process writes a study at a time: the storage holds an exclusive lock (``fcntl.flock``, released by
the kernel when the process dies) and a second writer gets a clear error.
"""

from __future__ import annotations

import json
import os
import sqlite3

try:
    import fcntl
except ImportError:  # pragma: no cover - no POSIX locks (Windows): studies are not locked
    fcntl = None


class StorageError(RuntimeError):
    """A storage that cannot be used; the message names the file and the fix."""


def _lock(f, path: str) -> None:
    if fcntl is None:
        return
    try:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise StorageError(f"{path} is open in another Study (in this process or another: a study has one writer "
                           "at a time); close that study (study.close()), or give this one another storage") from None


class JournalStorage:
    """JSON lines, one record per event, fsync'd (module docstring)."""

    def __init__(self, path: str):
        self.path = os.fspath(path)
        folder = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(folder, exist_ok=True)
        self._file = open(self.path, "a+b")  # noqa: SIM115 - held open (and locked) while the study lives
        _lock(self._file, self.path)
        self._file.seek(0)
        data = self._file.read()
        if data and not data.endswith(b"\n"):  # a record cut short by a kill: never finished, dropped
            self._file.truncate(data.rfind(b"\n") + 1)
        self._file.seek(0, os.SEEK_END)

    def records(self) -> list[dict]:
        self._file.seek(0)
        lines = self._file.read().split(b"\n")
        self._file.seek(0, os.SEEK_END)
        out = []
        for i, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                raise StorageError(f"{self.path}, line {i + 1}: not a JSON record; the journal is damaged "
                                   "(restore it, or start a new study)") from None  # fmt: skip
        return out

    def append(self, record: dict) -> None:
        self._file.write((json.dumps(record, separators=(",", ":")) + "\n").encode("utf-8"))
        self._file.flush()
        os.fsync(self._file.fileno())

    def reset(self, record: dict) -> None:
        """The journal holds only ``record`` (the study's settings, rewritten before its first trial)."""
        self._file.truncate(0)
        self._file.seek(0)
        self.append(record)

    def close(self) -> None:
        self._file.close()


class SQLiteStorage:
    """A table of events in an SQLite file (module docstring)."""

    def __init__(self, path: str):
        self.path = os.fspath(path)
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        self._lockfile = open(self.path + ".lock", "a")  # noqa: SIM115 - held while the study lives
        _lock(self._lockfile, self.path)
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute("CREATE TABLE IF NOT EXISTS events (id INTEGER PRIMARY KEY AUTOINCREMENT, record TEXT)")

    def records(self) -> list[dict]:
        return [json.loads(r) for (r,) in self._db.execute("SELECT record FROM events ORDER BY id")]

    def append(self, record: dict) -> None:
        self._db.execute("INSERT INTO events (record) VALUES (?)", (json.dumps(record, separators=(",", ":")),))

    def reset(self, record: dict) -> None:
        self._db.execute("DELETE FROM events")
        self.append(record)

    def close(self) -> None:
        self._db.close()
        self._lockfile.close()


def storage_path(spec) -> str:
    """The file behind a storage spec (``"study.jsonl"``, ``"sqlite:///path.db"``)."""
    spec = os.fspath(spec)
    return spec[len("sqlite:///") :] if spec.startswith("sqlite:///") else spec


def open_storage(spec):
    """A storage from ``spec``: a path (journal), ``sqlite:///path.db``, a storage object, or None."""
    if spec is None or hasattr(spec, "append"):
        return spec
    if not isinstance(spec, (str, os.PathLike)):
        raise TypeError(f"storage must be a file path, 'sqlite:///path.db' or None, got {spec!r}")
    text = os.fspath(spec)
    if text.startswith("sqlite://"):
        if not text.startswith("sqlite:///"):
            raise ValueError(f"storage {text!r}: write SQLite files as 'sqlite:///relative/or/absolute/path.db'")
        return SQLiteStorage(storage_path(text))
    return JournalStorage(text)


def default_directory(spec) -> str | None:
    """Trials' checkpoint folders next to a storage file: ``study.jsonl`` -> ``study_trials/``."""
    if spec is None or not isinstance(spec, (str, os.PathLike)):
        return getattr(spec, "directory", None)
    return os.path.splitext(storage_path(spec))[0] + "_trials"
