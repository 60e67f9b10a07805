"""Benchmark registry: short names -> loaders of ``TabularBenchmark`` objects.

``make_benchmark("nb201/cifar10", protocol="mean", test_csv=...)`` loads a
table; unknown names and options fail with the list of valid ones. Loaders
take keyword options only (``protocol`` always; others per benchmark, e.g.
``test_csv`` for NAS-Bench-201, ``data_path`` for NAS-Bench-101).
"""

from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Callable

from spaces.tabular import TabularBenchmark

BENCHMARKS: dict[str, Callable[..., TabularBenchmark]] = {}


def register_benchmark(name: str, loader: Callable[..., TabularBenchmark]) -> None:
    if name in BENCHMARKS:
        raise ValueError(f"benchmark {name!r} registered twice")
    BENCHMARKS[name] = loader


def _register_builtin() -> None:
    from spaces import nb201

    for ds in nb201.DATASETS:
        register_benchmark(f"nb201/{ds}", functools.partial(nb201.load, ds))


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
