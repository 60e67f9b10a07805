"""Atomic file writes: a reader sees the old file or the new one, never half of one.

Every writer goes through ``atomic_write``: the bytes go to a temporary file in
the target's folder, are flushed to disk, then ``os.replace`` puts the file in
place (atomic on POSIX and Windows within one file system). A failed write
(disk full, permission, interruption) removes its temporary file and leaves the
old file untouched. A full disk or quota (``ENOSPC``, ``EDQUOT``) is a
``DiskFullError`` whose one-line message names the path and says that a rerun
resumes once there is space: every file written before it is intact. The file
gets the mode a plain ``open(path, "w")`` would give it (0666 less the process
umask, e.g. 0644), not ``mkstemp``'s private 0600, so results can be shared like
any tool's output.
"""

from __future__ import annotations

import errno
import io
import os
import tempfile
from collections.abc import Callable
from typing import IO

import numpy as np


class DataError(ValueError):
    """A data file that is missing, corrupt or not what was expected; the message names the file and the fix."""


class DiskFullError(OSError):
    """No space (or quota) left for a write; the message names the path and says how the run continues."""


class MissingPackageError(ImportError):
    """An optional package a feature needs is not installed; the message says how to install it."""


FULL_DISK = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}


def disk_full(path: str | os.PathLike, e: OSError) -> DiskFullError:
    """The one-line error of a write to ``path`` that found the disk or the quota full."""
    err = DiskFullError(
        f"{os.fspath(path)}: {os.strerror(e.errno)}; every file written before is intact: free some space "
        "(or raise the quota) and run the same command again, it resumes"
    )
    err.errno = e.errno
    return err


def current_umask() -> int:
    """The process umask, read without changing it where the OS tells (Linux ``/proc``): ``os.umask``
    reads it only by setting it, which would briefly change the mode of files other threads create."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write(path: str | os.PathLike, write: Callable[[IO[bytes]], None]) -> None:
    """Calls ``write(f)`` on a temporary binary file, then renames it to ``path`` (mode 0666 less the umask)."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
        with os.fdopen(fd, "wb") as f:
            if hasattr(os, "fchmod"):  # mkstemp creates 0600 (no fchmod on Windows, where modes barely apply)
                os.fchmod(f.fileno(), 0o666 & ~current_umask())
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(e, OSError) and not isinstance(e, DiskFullError) and e.errno in FULL_DISK:
            raise disk_full(path, e) from e
        raise


def write_text_atomic(path: str | os.PathLike, text: str) -> None:
    atomic_write(path, lambda f: f.write(text.encode("utf-8")))


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> None:
    atomic_write(path, lambda f: f.write(data))


def save_figure(fig, path: str | os.PathLike, dpi: int = 110) -> None:
    """A matplotlib figure as a PNG at ``path``: laid out tight, its folder created, written atomically."""
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    write_bytes_atomic(path, buf.getvalue())


def savez_atomic(path: str | os.PathLike, arrays: dict[str, np.ndarray]) -> None:
    """``np.savez`` to ``path`` atomically (the name is kept as given, no ``.npz`` appended)."""
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    write_bytes_atomic(path, buf.getvalue())


def append_line_atomic(path: str | os.PathLike, line: str) -> None:
    """Appends one line to a small text file by rewriting it atomically.

    An interrupted write leaves the old file whole; a partial last line left by
    another (non-atomic) writer is dropped.
    """
    old = ""
    if os.path.exists(path):
        with open(path, encoding="utf-8", errors="replace") as f:  # a garbled log is kept, not a crash
            old = f.read()
        if old and not old.endswith("\n"):
            old = old[: old.rfind("\n") + 1]
    write_text_atomic(path, old + line.rstrip("\n") + "\n")
