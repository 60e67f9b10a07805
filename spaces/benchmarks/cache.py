"""Array caches of parsed benchmark tables (``$NASJAX_CACHE`` or ``~/.cache/nasjax``)."""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np

from spaces.files import savez_atomic

# bump when the arrays a loader caches change meaning (old files are then ignored)
CACHE_FORMAT = 1


def cache_dir() -> Path:
    """``$NASJAX_CACHE`` or ``~/.cache/nasjax`` (``$XDG_CACHE_HOME`` respected)."""
    if os.environ.get("NASJAX_CACHE"):
        return Path(os.environ["NASJAX_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "nasjax"


def package_version(package: str) -> str:
    """Installed version of a distribution ("unknown" when not installed)."""
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def file_tag(path: str) -> str:
    """Cache tag of a data file: changes when the file is replaced or edited."""
    st = os.stat(path)
    digest = hashlib.sha1(os.path.abspath(path).encode()).hexdigest()[:10]
    return f"{digest}-{st.st_size}-{st.st_mtime_ns}"


def cached_arrays(name: str, tag: str, build: Callable[[], dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """``build()``'s arrays, from ``<cache_dir>/<name>-<tag>.npz`` when present.

    ``tag`` names the data's source and version (``package_version`` of the
    package that ships it, or ``file_tag`` of a file), so upgrading the source
    rebuilds; ``CACHE_FORMAT`` is part of the name too. Writes go to a
    temporary file renamed into place (atomic), so concurrent processes never
    read half a file; an unwritable cache directory only costs speed.
    """
    fname = f"{name.replace('/', '_')}-{tag}-f{CACHE_FORMAT}.npz"
    path = cache_dir() / fname
    if path.exists():
        try:
            with np.load(path, allow_pickle=False) as z:
                return {k: z[k] for k in z.files}
        except (OSError, ValueError, EOFError):
            pass  # corrupt or foreign file: rebuild below and overwrite it
    arrays = {k: np.asarray(v) for k, v in build().items()}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        savez_atomic(path, arrays)
    except OSError:
        pass  # read-only home or full disk: loading still works, only slower
    return arrays
