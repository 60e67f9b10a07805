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
  A last line cut short by the kill is ignored (and cut off when the study next writes).
- ``SQLiteStorage("sqlite:///path.db")`` (stdlib ``sqlite3``): one row per event, committed at once.

A file that is refused (not a journal, not a study's database, a path that does not exist for a load)
is left exactly as it was: opening a storage changes no byte of it and creates nothing but a new
study's own file. A write that fails (a full disk, a read-only file) leaves the file as before and
raises one line naming the file and the cause.

Opened ``read_only=True``, or found on read-only media (the file cannot be opened for writing), a
storage reads its records and refuses every write with the reason: such a study loads for reading
(trials, best, dataframe) and cannot continue there.

One process writes a study at a time: the storage holds an exclusive lock (``fcntl.flock``, released by
the kernel when the process dies) and a second writer gets a clear error.
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3

try:
    import fcntl
except ImportError:  # pragma: no cover - no POSIX locks (Windows): studies are not locked
    fcntl = None

_NOT_WRITABLE = (errno.EROFS, errno.EACCES, errno.EPERM)


class StorageError(RuntimeError):
    """A storage that cannot be used; the message names the file and the fix."""


def _lock(fd: int, path: str) -> None:
    if fcntl is None:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise StorageError(f"{path} is open in another Study (in this process or another: a study has one writer "
                           "at a time); close that study (study.close()), or give this one another storage") from None


def _cause(e: OSError) -> str:
    return e.strerror or str(e) or type(e).__name__


def write_failed(path, e: OSError) -> StorageError:
    """The one line for a record that could not be written: the file, the cause, and that nothing changed."""
    return StorageError(f"{path}: the study's record could not be written ({_cause(e)}); the study did not move past "
                        "it: free space or make the file writable, then call again (a trial whose result was not "
                        "written is still pending: optimize runs it again)")  # fmt: skip


def _missing(path: str) -> StorageError:
    return StorageError(f"{path}: no such study file; check the path, or create a study with "
                        "Study(..., storage=...)")  # fmt: skip


def read_only_error(path: str, why: str) -> StorageError:
    """The one line for a write to a study that loads for reading only."""
    return StorageError(f"{path} is read-only ({why}): the study loads for reading (trials, best values, "
                        "trials_dataframe) and cannot continue there; copy the file to a writable place and "
                        "Study.load the copy to continue it")  # fmt: skip


class JournalStorage:
    """JSON lines, one record per event, fsync'd (module docstring). ``create=False``: the file must exist
    (a load); ``read_only=True``: it is only read."""

    def __init__(self, path: str, *, create: bool = True, read_only: bool = False):
        self.path = os.fspath(path)
        self.read_only = None  # why the file cannot be written, or None
        exists = os.path.isfile(self.path)
        if not exists and (not create or read_only):
            raise _missing(self.path)
        if os.path.isdir(self.path):
            raise StorageError(f"{self.path} is a folder; give the study a file (e.g. {self.path}/study.jsonl)")
        try:
            if read_only:
                self._file, self.read_only = open(self.path, "rb", buffering=0), "opened with read_only=True"  # noqa: SIM115
            elif exists:
                self._file = open(self.path, "r+b", buffering=0)  # noqa: SIM115 - held (and locked) while the study lives
            else:
                os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
                self._file = open(self.path, "x+b", buffering=0)  # noqa: SIM115
        except OSError as e:
            if not (exists and e.errno in _NOT_WRITABLE and not create):
                raise StorageError(f"{self.path}: cannot open the study file ({_cause(e)})") from None
            try:  # on read-only media: read it, write nothing
                self._file, self.read_only = open(self.path, "rb", buffering=0), _cause(e)  # noqa: SIM115
            except OSError as e2:
                raise StorageError(f"{self.path}: cannot open the study file ({_cause(e2)})") from None
        if self.read_only is None:
            try:
                _lock(self._file.fileno(), self.path)
            except BaseException:
                self._file.close()
                raise
        self._tail_checked = False

    def records(self) -> list[dict]:
        self._file.seek(0)
        data = self._file.read()
        self._file.seek(0, os.SEEK_END)
        lines = data.split(b"\n")
        if data and not data.endswith(b"\n"):
            if len(lines) == 1:  # no whole line: nothing a study wrote (its first record ends with a newline)
                raise StorageError(f"{self.path}: not a study journal (no line of it is a whole record); give the "
                                   "study another storage")  # fmt: skip
            lines = lines[:-1]  # a record cut short by a kill: never finished, ignored
        out = []
        for i, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError:  # JSONDecodeError, or bytes that are not UTF-8 text
                raise StorageError(f"{self.path}, line {i + 1}: not a JSON record: the file is not a study journal "
                                   "or it is damaged (restore it, or give the study another storage)") from None
            if not isinstance(record, dict) or not isinstance(record.get("event"), str):
                raise StorageError(f"{self.path}, line {i + 1}: not a study record (a JSON object with an \"event\"): "
                                   "the file is not a study journal or it is damaged")  # fmt: skip
            out.append(record)
        return out

    def _check_writable(self) -> None:
        if self.read_only is not None:
            raise read_only_error(self.path, self.read_only)

    def _cut_unfinished_tail(self) -> None:
        """Before the first write: a last line cut short by a kill goes (it was never a record)."""
        if self._tail_checked:
            return
        self._file.seek(0)
        data = self._file.read()
        if data and not data.endswith(b"\n"):
            self._file.truncate(data.rfind(b"\n") + 1)
        self._file.seek(0, os.SEEK_END)
        self._tail_checked = True

    def append(self, record: dict) -> None:
        self._check_writable()
        self._cut_unfinished_tail()
        end = self._file.seek(0, os.SEEK_END)
        self._write_at(end, (json.dumps(record, separators=(",", ":")) + "\n").encode("utf-8"), b"")

    def _write_at(self, end: int, data: bytes, old: bytes) -> None:
        """Writes ``data`` at byte ``end`` and fsyncs it (unbuffered: a failed write keeps no bytes in a buffer to
        land later); on failure the file is cut back to ``end`` bytes, ``old`` written back (reset's)."""
        fd = self._file.fileno()
        try:
            os.lseek(fd, end, os.SEEK_SET)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]  # a write past a limit may write part of it
            os.fsync(fd)
        except OSError as e:
            try:
                os.ftruncate(fd, end)
                os.lseek(fd, 0, os.SEEK_SET)
                view = memoryview(old)
                while view:
                    view = view[os.write(fd, view) :]
                os.lseek(fd, 0, os.SEEK_END)
            except OSError:  # pragma: no cover - the unfinished line is ignored on reading, cut before the next write
                self._tail_checked = False
            raise write_failed(self.path, e) from None

    def reset(self, record: dict) -> None:
        """The journal holds only ``record`` (the study's settings, rewritten before its first trial)."""
        self._check_writable()
        self._cut_unfinished_tail()
        self._file.seek(0)
        old = self._file.read()
        os.ftruncate(self._file.fileno(), 0)
        self._write_at(0, (json.dumps(record, separators=(",", ":")) + "\n").encode("utf-8"), old)

    def close(self) -> None:
        self._file.close()


class SQLiteStorage:
    """A table of events in an SQLite file (module docstring). ``create=False``: the database must exist and
    hold a study's table (a load); ``read_only=True``: it is only read."""

    def __init__(self, path: str, *, create: bool = True, read_only: bool = False):
        self.path = os.fspath(path)
        self.read_only = "opened with read_only=True" if read_only else None
        exists = os.path.isfile(self.path)
        if not exists and (not create or read_only):
            raise _missing(self.path)
        if not exists:
            os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        elif not read_only and not os.access(self.path, os.W_OK):
            if create:
                raise StorageError(f"{self.path}: cannot open the study file (not writable)")
            self.read_only = "not writable"
        mode = "ro" if self.read_only else "rw" if exists else "rwc"
        try:
            self._db = sqlite3.connect(f"file:{_uri_path(self.path)}?mode={mode}", uri=True,
                                       check_same_thread=False, isolation_level=None)  # fmt: skip
        except sqlite3.Error as e:
            raise StorageError(f"{self.path}: cannot open the SQLite file ({e})") from None
        self._lockfd = None
        try:
            if self.read_only is None:  # the lock is the database file's own flock (sqlite's locks are fcntl's)
                self._lockfd = os.open(self.path, os.O_RDONLY)
                _lock(self._lockfd, self.path)
            self._check_table(create)
            if self.read_only is None:
                self._db.execute("PRAGMA synchronous=FULL")
        except BaseException:
            self.close()
            raise

    def _check_table(self, create: bool) -> None:
        try:
            rows = self._db.execute("SELECT sql FROM sqlite_master WHERE type='table' AND name='events'").fetchall()
        except sqlite3.DatabaseError as e:
            raise StorageError(f"{self.path}: not an SQLite database a study can use ({e}); give the study "
                               "another storage") from None  # fmt: skip
        if not rows:
            if not create:
                raise StorageError(f"{self.path}: the database holds no study (no 'events' table); create one "
                                   "with Study(..., storage='sqlite:///...')")  # fmt: skip
            try:
                self._db.execute("CREATE TABLE events (id INTEGER PRIMARY KEY AUTOINCREMENT, record TEXT)")
            except sqlite3.Error as e:
                raise StorageError(f"{self.path}: cannot add the study's table ({e})") from None
            return
        columns = [r[1] for r in self._db.execute("PRAGMA table_info(events)")]
        if columns != ["id", "record"]:
            raise StorageError(f"{self.path}: its 'events' table (columns {columns}) is not a study's "
                               "(id, record): the database belongs to something else; give the study another "
                               "storage")  # fmt: skip

    def records(self) -> list[dict]:
        try:
            rows = self._db.execute("SELECT id, record FROM events ORDER BY id").fetchall()
        except sqlite3.DatabaseError as e:
            raise StorageError(f"{self.path}: the study's table cannot be read ({e})") from None
        out = []
        for i, (row, text) in enumerate(rows):
            try:
                record = json.loads(text)
            except (TypeError, ValueError):
                record = None
            if not isinstance(record, dict) or not isinstance(record.get("event"), str):
                raise StorageError(f"{self.path}, event {i + 1} (row id {row}): not a study record (a JSON object "
                                   "with an \"event\"): the database is damaged or not a study's")  # fmt: skip
            out.append(record)
        return out

    def _check_writable(self) -> None:
        if self.read_only is not None:
            raise read_only_error(self.path, self.read_only)

    def _write(self, statements) -> None:
        self._check_writable()
        try:
            self._db.execute("BEGIN IMMEDIATE")
            for sql, args in statements:
                self._db.execute(sql, args)
            self._db.execute("COMMIT")
        except sqlite3.Error as e:
            try:
                self._db.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            raise write_failed(self.path, OSError(str(e))) from None

    def append(self, record: dict) -> None:
        self._write([("INSERT INTO events (record) VALUES (?)", (json.dumps(record, separators=(",", ":")),))])

    def reset(self, record: dict) -> None:
        self._write([("DELETE FROM events", ()),
                     ("INSERT INTO events (record) VALUES (?)", (json.dumps(record, separators=(",", ":")),))])

    def close(self) -> None:
        self._db.close()
        if self._lockfd is not None:
            os.close(self._lockfd)
            self._lockfd = None


def _uri_path(path: str) -> str:
    from urllib.parse import quote

    return quote(os.path.abspath(path))


def storage_path(spec) -> str:
    """The file behind a storage spec (``"study.jsonl"``, ``"sqlite:///path.db"``)."""
    spec = os.fspath(spec)
    return spec[len("sqlite:///") :] if spec.startswith("sqlite:///") else spec


def open_storage(spec, *, create: bool = True, read_only: bool = False):
    """A storage from ``spec``: a path (journal), ``sqlite:///path.db``, a storage object, or None.
    ``create=False`` (a load): the file must exist; ``read_only``: nothing is written."""
    if spec is None or hasattr(spec, "append"):
        return spec
    if not isinstance(spec, (str, os.PathLike)):
        raise TypeError(f"storage must be a file path, 'sqlite:///path.db' or None, got {spec!r}")
    text = os.fspath(spec)
    if not text:
        raise ValueError("storage='' names no file: give a path ('study.jsonl', 'sqlite:///study.db') or None")
    if text.startswith("sqlite://"):
        if not text.startswith("sqlite:///"):
            raise ValueError(f"storage {text!r}: write SQLite files as 'sqlite:///relative/or/absolute/path.db'")
        return SQLiteStorage(storage_path(text), create=create, read_only=read_only)
    return JournalStorage(text, create=create, read_only=read_only)


def read_only_reason(storage) -> str | None:
    """Why ``storage`` cannot be written (read-only media, ``read_only=True``), or None."""
    return getattr(storage, "read_only", None) or None


def default_directory(spec) -> str | None:
    """Trials' checkpoint folders next to a storage file: ``study.jsonl`` -> ``study_trials/``."""
    if spec is None or not isinstance(spec, (str, os.PathLike)):
        return getattr(spec, "directory", None)
    return os.path.splitext(storage_path(spec))[0] + "_trials"
