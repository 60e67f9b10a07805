"""Command-line plumbing shared by the scripts: one clear line per mistake, exit code 2.

``run(main)`` runs an absl ``main`` with a flags parser that turns flag and
config-file mistakes (a misspelt ``--config.x``, an override path that does not
parse, a missing config file, a ``get_config(arg)`` that rejects its argument, a
value of the wrong type) into one line ``config error: ...``, and turns the library's own errors raised by
``main`` (``ConfigError``, ``DataError``, ``CheckpointError``, ``DiskFullError``,
``MissingPackageError``, absl's ``UsageError``) into ``config error: ...`` / ``data error: ...`` /
``checkpoint error: ...`` / ``disk full: ...`` / ``missing package: ...`` / ``usage error: ...``, all
with exit code 2. A path the system refuses (permission denied, a read-only file system, a folder
where a file belongs or the reverse) is ``file error: <path>: <reason>``. Any other exception is a
bug and keeps its traceback.

Quiet by default: a run logs warnings and errors only. ``--verbosity=0`` (or higher) shows the
INFO lines too (JAX's backend probing, e.g. ``Unable to initialize backend 'tpu'``, and how the
seeds split over devices); ``--verbosity=1`` adds debug lines (absl's levels).
"""

from __future__ import annotations

import errno
import keyword
import os
import re
import sys
import tempfile
from collections.abc import Callable

from absl import app, flags
from ml_collections.config_flags import config_path

from nas.core.options import OptionError
from nas.engine import devices
from nas.engine.budget import BudgetError
from nas.engine.checkpoint import CheckpointError
from nas.engine.program_cache import CompileThreadsError
from nas.experiment.config_fields import ConfigError
from spaces.files import FULL_DISK, DataError, DiskFullError, MissingPackageError, disk_full
from spaces.names import UnknownName

__all__ = ["ConfigError", "DataError", "CheckpointError", "DiskFullError", "run", "parse_flags", "guarded",
           "output_file", "output_folder"]  # fmt: skip

# where the train commands keep JAX's persistent compilation cache unless told otherwise
DEFAULT_COMPILATION_CACHE = os.environ.get("JAX_COMPILATION_CACHE_DIR", devices.DEFAULT_COMPILATION_CACHE)


def _config_spec(argv: list[str]) -> str | None:
    for i, a in enumerate(argv):
        if a.startswith("--config="):
            return a.split("=", 1)[1]
        if a == "--config" and i + 1 < len(argv):
            return argv[i + 1]
    return None


def _unquote(msg: str) -> str:
    """ml_collections wraps messages in several layers of repr quotes."""
    for _ in range(3):
        msg = msg.strip()
        if len(msg) >= 2 and msg[0] == msg[-1] and msg[0] in "'\"":
            msg = msg[1:-1]
        msg = msg.replace("\\'", "'").replace('\\"', '"').replace("\\\\n", "\n").replace("\\n", "\n")
    return " ".join(msg.split())


def _path_parts(field_path: str) -> list[str]:
    """``field_path`` cut at the dots outside brackets and quotes: ``a.b["c.d"].e`` -> ``a``, ``b["c.d"]``, ``e``."""
    parts, depth, quote, start = [], 0, "", 0
    for i, c in enumerate(field_path):
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == "[":
            depth += 1
        elif c == "]":
            depth -= 1
        elif c == "." and depth == 0:
            parts.append(field_path[start:i])
            start = i + 1
    return [*parts, field_path[start:]]


def _why_not_a_name(part: str) -> str:
    """In words, why ``part`` of an override's path is not a field name ml_collections can read."""
    if not part:
        return "the path has an empty part (two dots in a row, or a dot at an end)"
    if keyword.iskeyword(part):
        return f"{part!r} is a Python keyword"
    if part[0].isdigit():
        return f"{part!r} starts with a digit"
    bad = sorted({c for c in part if not (c.isalnum() or c == "_")})
    if bad:
        chars = " ".join(repr(c) for c in bad)
        return f"{part!r} holds {chars}; a name has letters, digits and underscores only (a '-' reads as a minus)"
    return f"{part!r} is not a field name"


def override_path_error(argv: list[str]) -> str | None:
    """The line for the first ``--config.<path>=value`` whose path ml_collections cannot parse (it reads the
    path as a Python expression), naming the override, the part at fault and how to write it; ``None`` when
    every override's path parses."""
    for arg in argv:
        m = re.match(r"--?(?:no)?config\.([^=]*)", arg)
        if m is None:
            continue
        field_path = m.group(1)
        try:
            config_path.split(field_path)
            continue
        except (ValueError, SyntaxError, TypeError):
            pass
        parts = _path_parts(field_path)
        at = next((i for i, p in enumerate(parts) if not re.fullmatch(r"[A-Za-z_]\w*(\[.*\])*", p)
                   or keyword.iskeyword(p.split("[")[0])), None)  # fmt: skip
        if at is None:
            return f"the override {arg} does not parse: its path {field_path!r} is not a dotted path of field names"
        why = _why_not_a_name(parts[at])
        if at > 0 and parts[at]:
            key = f'"{parts[at]}"' if '"' not in parts[at] else repr(parts[at])
            fixed = ".".join([*parts[: at - 1], f"{parts[at - 1]}[{key}]", *parts[at + 1 :]])
            fix = f"; write such a key in brackets, the argument quoted for the shell: '--config.{fixed}=...'"
        else:
            fix = "; check the field names in the config file"
        return f"the override {arg} does not parse: {why}{fix}"
    return None


def flag_error_line(e: BaseException, argv: list[str]) -> str:
    """One line saying what is wrong with the command line and how to fix it."""
    spec = _config_spec(argv)
    path = spec.split(":", 1)[0] if spec else None
    if path is not None and not os.path.isfile(path):
        return f"config file not found: {path} (give --config=configs/<name>.py[:argument])"
    bad_override = override_path_error(argv)
    if bad_override is not None:  # ml_collections would blame get_config and print an AST node
        return bad_override
    arg = spec.split(":", 1)[1] if spec and ":" in spec else None
    if "Error whilst parsing config file" in str(e):  # get_config raised: its last traceback line says why
        last = [line for line in str(e).splitlines() if line.strip()][-1].strip()
        return f"{path}: get_config({arg!r}) failed: {last} (see the file's docstring for its arguments)"
    msg = _unquote(str(e))
    if isinstance(e, AttributeError):  # ml_collections: an override of a field the config does not have
        field = re.match(r"'?([^'\s]+)'?", msg)
        hint = msg[msg.find("Did you mean") :] if "Did you mean" in msg else ""
        name = field.group(1) if field else msg
        return f"the config has no field {name!r} ({spec}). {hint}".strip()
    if isinstance(e, flags.Error):
        return msg
    return f"{path}: get_config({arg!r}) failed: {type(e).__name__}: {msg} (see the file's docstring for its arguments)"


def parse_flags(argv: list[str]) -> list[str]:
    """``flags.FLAGS(argv)`` with one-line errors (exit code 2)."""
    try:
        rest = flags.FLAGS(argv)
        if "verbosity" in flags.FLAGS and flags.FLAGS["verbosity"].using_default_value:
            flags.FLAGS.verbosity = -1  # warnings only (absl would raise it to INFO after parsing)
        if "config" in flags.FLAGS:  # config_flags loads the file lazily: load it now, while errors get one line
            value = flags.FLAGS["config"].value
            _ = list(value.keys()) if hasattr(value, "keys") else value  # a plain --config string is not a file
        return rest
    except Exception as e:  # noqa: BLE001 - config files run arbitrary code; every failure gets one line
        sys.stderr.write(f"config error: {flag_error_line(e, argv)}\n")
        sys.exit(2)


ERRORS = (
    (ConfigError, "config error"),
    (DataError, "data error"),
    (CheckpointError, "checkpoint error"),
    (DiskFullError, "disk full"),
    (MissingPackageError, "missing package"),
    (app.UsageError, "usage error"),
    # the library's refusals of a name, an option value or a budget given on the command line
    (UnknownName, "config error"),
    (OptionError, "config error"),
    (BudgetError, "config error"),
    (CompileThreadsError, "config error"),
)
# what the system says about a path the user gave (not a bug of the code: the path or its permissions)
REFUSED_PATH = {errno.EACCES, errno.EPERM, errno.EROFS, errno.EISDIR, errno.ENOTDIR, errno.ENAMETOOLONG,
                errno.ELOOP}  # fmt: skip


def path_refused(e: OSError) -> str:
    """The one line of an ``OSError`` the system raised for a path: which path, why, and what to do."""
    where = e.filename if e.filename is not None else "?"
    return f"{where}: {e.strerror or e}; give a path you can use (a file where a file goes) or change its permissions"


def guarded(main: Callable[[list[str]], int | None]) -> Callable[[list[str]], int | None]:
    """``main`` with the library's errors printed as one line and exit code 2."""

    def wrapped(argv):
        try:
            try:
                return main(argv)
            except OSError as e:  # a full disk outside the atomic writers (a folder, the lock) is one line too
                if isinstance(e, DiskFullError) or e.errno not in FULL_DISK:
                    raise
                raise disk_full(e.filename or "?", e) from e
        except tuple(cls for cls, _ in ERRORS) as e:
            kind = next(k for cls, k in ERRORS if isinstance(e, cls))
            sys.stderr.write(f"\n{kind}: {' '.join(str(e).split())}\n")
            return 2
        except OSError as e:
            if e.errno not in REFUSED_PATH or e.filename is None:
                raise
            sys.stderr.write(f"\nfile error: {path_refused(e)}\n")
            return 2

    return wrapped


def output_file(path: str, flag: str, example: str = "") -> str:
    """``path`` (``--flag``'s value) as an absolute path a file can be written to, or a ``ConfigError``
    saying why not (a folder, a file where a folder belongs, a folder that cannot be written); checked
    before any work is done."""
    full = os.path.abspath(os.path.expanduser(path))
    if os.path.isdir(full):
        name = f", e.g. {os.path.join(path, example)}" if example else ""
        raise ConfigError(f"--{flag}={path} is a folder; give the path of the file to write{name}")
    parent = os.path.dirname(full)
    while not os.path.exists(parent):  # the nearest existing folder: the missing ones are created
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise ConfigError(f"--{flag}={path}: {parent} is a file, not a folder; give a path under a folder")
    try:  # a real write, not os.access: root passes every permission check, a read-only mount does not
        with tempfile.TemporaryFile(dir=parent):
            pass
    except OSError as e:
        raise ConfigError(
            f"--{flag}={path}: cannot write in {parent} ({e.strerror or e}); give a path in a folder you can write"
        ) from e
    return full


def output_folder(path: str, flag: str, off: str = "") -> str:
    """``path`` (``--flag``'s value) as a folder that exists and can be written (created if missing), or a
    ``ConfigError`` saying why not; ``''`` stays ``''`` (the feature off). ``off`` says how to turn it off."""
    if not path:
        return path
    full = os.path.abspath(os.path.expanduser(path))
    if os.path.exists(full) and not os.path.isdir(full):
        raise ConfigError(f"--{flag}={path} is a file, not a folder; give a folder{off}")
    try:
        os.makedirs(full, exist_ok=True)
        with tempfile.TemporaryFile(dir=full):
            pass
    except OSError as e:
        why = e.strerror or e
        raise ConfigError(f"--{flag}={path}: cannot write in it ({why}); give a folder you can write{off}") from e
    return full


def run(main: Callable[[list[str]], int | None]) -> None:
    """``app.run`` with one-line errors for flags, configs and the library's errors."""
    app.run(guarded(main), flags_parser=parse_flags)
