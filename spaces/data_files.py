"""Reading data files so that every failure is one line: ``DataError("<file>: <what is wrong>; <fix>")``.

One reader per file kind, used by every loader (benchmark tables, CSVs, JSON, pickles, ``.npz``
files, meta-learned parameters, workdir files): ``read_json``, ``read_csv``, ``read_npz``,
``read_pickle``. Each turns whatever its parser raises on a truncated, empty, foreign or
mis-encoded file (``JSONDecodeError``, ``EOFError``, ``BadZipFile``, ``UnicodeDecodeError``, ...)
into a ``DataError`` that names the file and the fix the caller gives; ``npz_arrays`` (training
checkpoints, a run's checkpoint and histories) says what is wrong with an ``.npz`` (a ``DamagedFile``)
for readers that word their own fix. What a loader then reads
out of the parsed content is checked inside ``data_errors(path, fix)`` (a field that is missing,
an index out of range, a value of the wrong type fail the same way) and with ``numbers`` (lists
of the expected length, finite numbers in a range).
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import pickle
import zipfile
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from spaces.files import DataError

# what parsers and the code that reads their output raise on content that is not what was expected
PARSE_ERRORS = (
    ValueError,
    KeyError,
    IndexError,
    TypeError,
    AttributeError,
    EOFError,
    OSError,
    zipfile.BadZipFile,
    pickle.UnpicklingError,
)


# what an exception raised while reading a file says about the file (the first matching type wins)
PROBLEMS = (
    (FileNotFoundError, lambda e: "file not found"),
    (IsADirectoryError, lambda e: "is a directory, not a file"),
    (json.JSONDecodeError, lambda e: f"not valid JSON ({e.msg} at line {e.lineno}, column {e.colno}: cut short?)"),
    (UnicodeDecodeError, lambda e: "not a UTF-8 CSV/JSON/text file (a binary or differently encoded file)"),
    (EOFError, lambda e: "ends early (empty or cut short)"),
    (zipfile.BadZipFile, lambda e: f"not a readable .npz archive ({e}: cut short or another format)"),
    (KeyError, lambda e: f"lacks the field {e.args[0]!r}" if e.args else "lacks a field"),
    (pickle.UnpicklingError, lambda e: f"not a readable pickle ({e})"),
)


def problem(e: BaseException) -> str:
    """What an exception raised while reading a file says about the file, in words."""
    for kind, words in PROBLEMS:
        if isinstance(e, kind):
            return words(e)
    text = short(e)
    return text if type(e) in (ValueError, TypeError) else f"{type(e).__name__}: {text}"  # a parse error's own words


@contextlib.contextmanager
def data_errors(path: str | os.PathLike, fix: str) -> Iterator[None]:
    """Inside: any error that reading ``path`` raises becomes ``DataError("<path>: <problem>; <fix>")``."""
    try:
        yield
    except DataError:
        raise
    except PARSE_ERRORS as e:
        raise DataError(f"{os.fspath(path)}: {problem(e)}; {fix}") from e


def require(path: str | os.PathLike, missing: str, what: str, folder: bool = False) -> None:
    """A ``DataError`` unless ``path`` is there and of its kind: ``missing`` (the message that says what the
    path should hold and where it comes from) when it is not there, and one line naming the path and ``what``
    belongs there when it is a folder where a file belongs (``folder=False``) or the reverse."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise DataError(missing)
    if folder and not os.path.isdir(path):
        raise DataError(f"{path} is a file, not a folder; give {what}")
    if not folder and os.path.isdir(path):
        raise DataError(f"{path} is a folder, not a file; give {what}")


def read_json(path: str | os.PathLike, fix: str) -> Any:
    with data_errors(path, fix), open(path, encoding="utf-8") as f:
        return json.load(f)


class DamagedFile(DataError):
    """A file that cannot be parsed: the message is ``<path>: <what>``; ``path`` and ``what`` are kept for readers
    that word it with their own fix."""

    def __init__(self, path: str | os.PathLike, what: str):
        super().__init__(f"{os.fspath(path)}: {what}")
        self.path, self.what = os.fspath(path), what


# the first four bytes of a zip archive: its first member's header, or the end record of an archive of no member
ZIP_STARTS = (b"PK\x03\x04", b"PK\x05\x06")


def npz_arrays(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Every array of the ``.npz`` file ``path`` (pickled objects are never loaded); a ``DamagedFile`` saying
    which of these it is otherwise: empty, not a zip archive from its first bytes (garbled or another format),
    cut short (a zip archive's directory is at its end), or the array whose bytes are damaged.

    ``np.load`` alone says none of this: it takes a file that does not start as a zip archive for a pickle
    ("This file contains pickled (object) data"), an empty one for an ``EOFError`` and a cut one for a
    ``BadZipFile``, all without the path."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError as e:
        raise DamagedFile(path, problem(e)) from e
    if not head:
        raise DamagedFile(path, "empty (0 bytes)")
    if head not in ZIP_STARTS:
        raise DamagedFile(path, f"not an .npz archive: it starts with {head!r}, not with a zip archive's "
                                f"{ZIP_STARTS[0]!r} (garbled, or a file of another format)")  # fmt: skip
    try:
        z = np.load(path, allow_pickle=False)
    except Exception as e:  # a damaged zip directory raises BadZipFile, struct.error, ValueError, ...
        raise DamagedFile(path, f"cut short or damaged at its end, where a zip archive keeps its directory "
                                f"({type(e).__name__}: {short(e)})") from e  # fmt: skip
    arrays = {}
    with z:
        for name in z.files:
            try:
                arrays[name] = z[name]
            except Exception as e:  # a damaged .npy header or data raises ValueError, EOFError, BadZipFile, ...
                raise DamagedFile(path, f"its array {name!r} is damaged ({type(e).__name__}: {short(e)})") from e
    return arrays


def short(e: BaseException) -> str:
    """An exception's message on one line, at most 160 characters."""
    text = " ".join(str(e).split())
    return text if len(text) <= 160 else text[:157] + "..."


def read_npz(path: str | os.PathLike, fix: str, fields: Sequence[str] = ()) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` file (no pickles, ``npz_arrays``); ``fields`` must be among them."""
    try:
        arrays = npz_arrays(path)
    except DamagedFile as e:
        raise DataError(f"{e}; {fix}") from e
    missing = [k for k in fields if k not in arrays]
    if missing:
        raise DataError(f"{os.fspath(path)}: lacks the array(s) {missing}; {fix}")
    return arrays


def read_pickle(path: str | os.PathLike, fix: str, unpickler: type = pickle.Unpickler) -> Any:
    with data_errors(path, fix), open(path, "rb") as f:
        return unpickler(f).load()


def read_csv(path: str | os.PathLike, fix: str, columns: Sequence[str]) -> Iterator[tuple[int, dict]]:
    """``(line number, row)`` of a CSV file with (at least) ``columns``; a row cut short is an error."""
    with data_errors(path, fix), open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        missing = [c for c in columns if c not in (reader.fieldnames or [])]
        if missing:
            raise DataError(f"{os.fspath(path)}: needs columns {missing}, has {reader.fieldnames}; {fix}")
        for line, row in enumerate(reader, start=2):
            if None in row.values() or None in row:
                raise DataError(
                    f"{os.fspath(path)}:{line}: the row's fields do not match the header (cut short?); {fix}"
                )
            yield line, row


def numbers(
    values: Any,
    what: str,
    path: str | os.PathLike,
    fix: str,
    *,
    length: int | None = None,
    low: float = -np.inf,
    high: float = np.inf,
) -> np.ndarray:
    """``values`` as a float64 array of finite numbers in ``[low, high]`` (``length`` of them when given)."""
    where = f"{os.fspath(path)}: {what}"
    if isinstance(values, (str, bytes, dict)) or not isinstance(values, (Sequence, np.ndarray)):
        raise DataError(f"{where} must be a list of numbers, got {type(values).__name__}; {fix}")
    if length is not None and len(values) != length:
        raise DataError(f"{where} has {len(values)} entries, not {length} (lists of unequal length); {fix}")
    bad = [i for i, v in enumerate(values) if isinstance(v, bool) or not isinstance(v, (int, float, np.number))]
    if bad:
        raise DataError(f"{where}[{bad[0]}] = {values[bad[0]]!r} is not a number; {fix}")
    arr = np.asarray(values, np.float64)
    out = ~np.isfinite(arr) | (arr < low) | (arr > high)
    if out.any():
        i = int(np.argmax(out))
        raise DataError(f"{where}[{i}] = {float(arr[i])!r} is not a finite number in [{low}, {high}]; {fix}")
    return arr
