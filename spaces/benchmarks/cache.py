"""Array caches of parsed benchmark tables, and safe reads of the files they come from.

Parsing a package's pickled table takes seconds; ``cached_arrays`` keeps the
parsed arrays as ``.npz`` in ``$NASJAX_CACHE`` or ``~/.cache/nasjax``. A cache file
is named by the data's source (``package_version`` of the package that ships it,
or ``source_tag`` of a data file) and ``CACHE_FORMAT``, and stores a manifest of
its arrays (names, shapes, dtypes). A cache that cannot be read, or whose arrays
do not match its manifest, is rebuilt with a warning that names the file.

``source_tag(path)`` identifies a file's content without reading all of it: its
size, its modification time and a SHA-1 of its first and last MiB. A different
file of the same size (a re-download, an edit) gets another tag.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import logging
import os
import pickle
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from spaces.files import DataError, savez_atomic

# bump when the arrays a loader caches change meaning (old files are then ignored)
CACHE_FORMAT = 2
_MANIFEST = "__manifest__"
_EDGE = 1 << 20  # bytes hashed at each end of a source file


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


def source_tag(path: str | os.PathLike) -> str:
    """Content tag of a data file: size, mtime and a SHA-1 of its first and last MiB (see module doc)."""
    st = os.stat(path)
    h = hashlib.sha1()
    with open(path, "rb") as f:
        h.update(f.read(_EDGE))
        if st.st_size > _EDGE:
            f.seek(max(st.st_size - _EDGE, _EDGE))
            h.update(f.read(_EDGE))
    return f"{st.st_size}-{st.st_mtime_ns}-{h.hexdigest()[:16]}"


def _manifest(arrays: dict[str, np.ndarray]) -> str:
    return json.dumps({k: [list(v.shape), v.dtype.str] for k, v in sorted(arrays.items())})


def read_cache(path: str | os.PathLike) -> dict[str, np.ndarray] | None:
    """The arrays of a cache file, or None (with a warning naming the file) when it is unusable."""
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as e:
        logging.warning("nasjax cache %s is unreadable (%s: %s); rebuilding it", path, type(e).__name__, e)
        return None
    manifest = arrays.pop(_MANIFEST, None)
    if manifest is None or str(manifest) != _manifest(arrays):
        logging.warning("nasjax cache %s does not match its manifest (arrays or shapes differ); rebuilding it", path)
        return None
    return arrays


def write_cache(path: str | os.PathLike, arrays: dict[str, np.ndarray]) -> None:
    """Writes ``arrays`` with their manifest, atomically (``read_cache`` checks the manifest)."""
    arrays = {k: np.asarray(v) for k, v in arrays.items()}
    savez_atomic(path, {**arrays, _MANIFEST: np.asarray(_manifest(arrays))})


def cached_arrays(name: str, tag: str, build: Callable[[], dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """``build()``'s arrays, from ``<cache_dir>/<name>-<tag>-f<CACHE_FORMAT>.npz`` when present and sound.

    Writes are atomic, so concurrent processes never read half a file; an
    unwritable cache directory only costs speed.
    """
    fname = f"{name.replace('/', '_')}-{tag}-f{CACHE_FORMAT}.npz"
    path = cache_dir() / fname
    if path.exists():
        arrays = read_cache(path)
        if arrays is not None:
            return arrays
    arrays = {k: np.asarray(v) for k, v in build().items()}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_cache(path, arrays)
    except OSError as e:  # read-only home or full disk: loading still works, only slower
        logging.warning("nasjax cache %s not written (%s); loads stay slow", path, e)
    return arrays


def reinstall(package: str) -> str:
    """The fix for a broken data file shipped by ``package``."""
    return f"reinstall the package: pip install --force-reinstall {package}"


def load_package_pickle(path: str | os.PathLike, package: str, unpickler: type = pickle.Unpickler):
    """Unpickles a data file shipped by ``package``; a missing or broken file says how to repair it."""
    fix = reinstall(package)
    try:
        with open(path, "rb") as f:
            return unpickler(f).load()
    except FileNotFoundError as e:
        raise DataError(f"{path} is missing from the installed {package!r} package; {fix}") from e
    except Exception as e:  # unpickling a truncated or foreign file raises almost anything
        raise DataError(f"{path} (shipped by {package!r}) cannot be read ({type(e).__name__}: {e}); {fix}") from e
