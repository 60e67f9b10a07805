"""Benchmark registry: short names -> loaders of ``TabularBenchmark`` objects.

``make_benchmark("nb201/cifar10", protocol="mean", test_csv=...)`` loads a
table; unknown names and options fail with the list of valid ones. Loaders
take keyword options only (``protocol`` always; others per benchmark, e.g.
``test_csv`` for NAS-Bench-201, ``data_path`` for NAS-Bench-101).

Names (DESIGN.md / SCHEMA.md): ``nb201/<cifar10|cifar100|imagenet16>``,
``hpolib/<task>``, ``hpobench/<task>``, ``nasbench_graph/<dataset>``,
``analognas/<metric>``, ``nb101`` and ``nb101/data1k``. The NAS-Bench-101
loaders live in ``spaces.nb101_data`` and are imported only when called.

Parsed package tables are cached as ``.npz`` files (``cached_arrays``) in
``$NASJAX_CACHE`` or ``~/.cache/nasjax``, keyed by the package version, so a
second load skips unpickling thousands of Python dicts.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import importlib.metadata
import inspect
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from spaces.tabular import TabularBenchmark

BENCHMARKS: dict[str, Callable[..., TabularBenchmark]] = {}

# bump when the arrays a loader caches change meaning (old files are then ignored)
CACHE_FORMAT = 1
SHARED_DATA = Path(os.environ.get("NAS_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


def register_benchmark(name: str, loader: Callable[..., TabularBenchmark]) -> None:
    if name in BENCHMARKS:
        raise ValueError(f"benchmark {name!r} registered twice")
    BENCHMARKS[name] = loader


# -- NAS-Bench-101: lazy, so this module never imports spaces.nb101_data -------
def _load_nb101(*, data_path: str = "", protocol: str = "mean", epochs: int = 108) -> TabularBenchmark:
    """Full NAS-Bench-101 from the official tfrecord (or its converted cache)."""
    if not data_path:
        raise ValueError(
            "benchmark 'nb101' needs data_path=<nasbench_only108.tfrecord or its converted cache>; "
            "download the official file (about 500 MB) from github.com/google-research/nasbench"
        )
    from spaces import nb101_data

    return nb101_data.load(data_path=data_path, protocol=protocol, epochs=epochs)


def _load_nb101_data1k(*, path: str = str(SHARED_DATA / "nb101" / "data-1k.json"), protocol: str = "mean"):
    """The 1,000 real NAS-Bench-101 cells of data-1k.json (one 108-epoch run, no test split)."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"nb101/data1k: {path} is absent; pass path=<data-1k.json> (see shared/data/README.md)")
    from spaces import nb101_data

    return nb101_data.load_data1k(path=path, protocol=protocol)


def _register_builtin() -> None:
    from spaces import analog_nasbench, hpobench, hpolib, nasbench_graph, nb201

    for ds in nb201.DATASETS:
        register_benchmark(f"nb201/{ds}", functools.partial(nb201.load, ds))
    for task in hpolib.TASKS:
        register_benchmark(f"hpolib/{task}", functools.partial(hpolib.load, task))
    for task in hpobench.TASKS:
        register_benchmark(f"hpobench/{task}", functools.partial(hpobench.load, task))
    for ds in nasbench_graph.DATASETS:
        register_benchmark(f"nasbench_graph/{ds}", functools.partial(nasbench_graph.load, ds))
    for metric in analog_nasbench.METRICS:
        register_benchmark(f"analognas/{metric}", functools.partial(analog_nasbench.load, metric))
    register_benchmark("nb101", _load_nb101)
    register_benchmark("nb101/data1k", _load_nb101_data1k)


_register_builtin()


def available_benchmarks() -> list[str]:
    return sorted(BENCHMARKS)


def benchmark_options(name: str) -> list[str]:
    loader = BENCHMARKS[name]
    return [p for p in inspect.signature(loader).parameters if p != "dataset"]


def make_benchmark(name: str, **kwargs) -> TabularBenchmark:
    if name not in BENCHMARKS:
        close = difflib.get_close_matches(name, BENCHMARKS, n=3)
        hint = f" Did you mean {close}?" if close else ""
        raise ValueError(f"unknown benchmark {name!r}.{hint} Registered: {available_benchmarks()}")
    allowed = benchmark_options(name)
    bad = [k for k in kwargs if k not in allowed]
    if bad:
        raise ValueError(f"benchmark {name!r} has no option(s) {bad}; its options are {allowed}")
    return BENCHMARKS[name](**kwargs)


# -- the .npz cache of parsed package tables -----------------------------------
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
        fd, tmp = tempfile.mkstemp(prefix=fname, suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                np.savez(f, **arrays)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except OSError:
        pass  # read-only home or full disk: loading still works, only slower
    return arrays
