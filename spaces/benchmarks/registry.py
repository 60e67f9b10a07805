"""Benchmark registry: short names -> loaders of objectives.

``make_benchmark("nb201/cifar10", protocol="mean", test_csv=...)`` loads a
benchmark; unknown names and options fail with the list of valid ones. Loaders
take keyword options only (``protocol`` for tables; others per benchmark, e.g.
``test_csv`` for NAS-Bench-201, ``data_path`` for NAS-Bench-101). A loader
returns any object with the objective contract (``spaces.benchmarks.objective``);
``register_benchmark`` adds your own.

Optional public files (``spaces.benchmarks.data_files``): a loader option that reads one is declared
with ``register_benchmark(..., data_files={option: key})``; when a caller leaves that option empty
and the file is in the data directory (``$NASJAX_DATA``, default ``~/.cache/nasjax/data``),
``make_benchmark`` passes its path (``found_data_files`` says which).

Names: ``nb201/<cifar10|cifar100|imagenet16>``, ``hpolib/<task>``,
``hpobench/<task>``, ``nasbench_graph/<dataset>``, ``analognas/<metric>``,
``nb101``, ``nb101/data1k`` and the training tasks ``mlp/<diabetes|boston|naval>``
(``spaces.benchmarks.mlp_training``; options ``split``, ``data_path``,
``valid_fraction``, ``fidelities``; no ``protocol``). Fidelities (docs/reference/benchmarks.md,
"Fidelities"): ``nb201/*`` with ``fidelity_data`` (12 and 200 epochs), ``nb101`` and
``nb101/data1k`` with ``fidelities`` (epochs), ``mlp/*`` with ``fidelities`` (iterations). The NAS-Bench-101 loaders
(``spaces.benchmarks.nb101_data``) and the MLP-training objective (flax, optax,
scikit-learn) are imported only when called.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable

from spaces.names import lookup

BENCHMARKS: dict[str, Callable] = {}
DATA_FILES: dict[str, dict[str, str]] = {}  # benchmark -> {loader option: public file key}


def register_benchmark(name: str, loader: Callable, data_files: dict[str, str] | None = None) -> None:
    """Registers ``loader(**options) -> objective`` under ``name`` (keyword options only); ``data_files``
    maps a loader option to the public file it reads (``spaces.benchmarks.data_files.PUBLIC_FILES``)."""
    if name in BENCHMARKS:
        raise ValueError(f"benchmark {name!r} registered twice")
    BENCHMARKS[name] = loader
    DATA_FILES[name] = dict(data_files or {})


def data_file_key(name: str, option: str) -> str | None:
    """The public file that option ``option`` of benchmark ``name`` reads, or None."""
    return DATA_FILES.get(name, {}).get(option)


def found_data_files(name: str, **given) -> dict[str, str]:
    """``{option: path}`` for the public-file options of ``name`` that ``given`` leaves empty and whose
    file is in the data directory."""
    from spaces.benchmarks.data_files import locate

    found = {}
    for option, key in DATA_FILES.get(name, {}).items():
        path = None if given.get(option) else locate(key)
        if path is not None:
            found[option] = path
    return found


# -- NAS-Bench-101: lazy, so this module never imports spaces.benchmarks.nb101_data -------
def _load_nb101(*, data_path: str = "", protocol: str = "mean", epochs: int = 108, fidelities=(), partial=False):
    """Full NAS-Bench-101 from the official tfrecord (or its converted cache); ``fidelities``: epoch budgets;
    ``partial``: accept a file of some of the cells only."""
    from spaces.benchmarks import nb101_data

    return nb101_data.load(
        data_path=data_path, protocol=protocol, epochs=epochs, fidelities=fidelities, partial=partial
    )


def _load_nb101_data1k(*, data_path: str = "", protocol: str = "mean", fidelities=()):
    """The 1,000 real NAS-Bench-101 cells of nasbench-vis' data-1k.json (one run per budget, no test split)."""
    from spaces.benchmarks import nb101_data

    return nb101_data.load_data1k(data_path=data_path, protocol=protocol, fidelities=fidelities)


# -- MLP training (spaces.benchmarks.mlp_training): lazy, it imports flax, optax and scikit-learn -------
MLP_DATASETS = ("diabetes", "boston", "naval")


def _load_mlp(dataset: str, *, split: int = 0, data_path: str = "", valid_fraction: float = 0.2, fidelities=()):
    """One-hidden-layer MLPs trained with the hyperparameters of ``spaces.hpo.mlp_space`` (Section VIII);
    ``fidelities``: training iterations as the fidelity (the space then leaves ``max_iter`` out)."""
    from spaces.benchmarks import mlp_training

    return mlp_training.load(
        dataset, split=split, data_path=data_path, valid_fraction=valid_fraction, fidelities=fidelities
    )


def _register_builtin() -> None:
    from spaces.benchmarks import analog_nasbench, hpobench, hpolib, nasbench_graph, nb201

    for ds in nb201.DATASETS:
        register_benchmark(f"nb201/{ds}", functools.partial(nb201.load, ds), {"test_csv": "nb201_test"})
    for task in hpolib.TASKS:
        register_benchmark(f"hpolib/{task}", functools.partial(hpolib.load, task))
    for task in hpobench.TASKS:
        register_benchmark(f"hpobench/{task}", functools.partial(hpobench.load, task))
    for ds in nasbench_graph.DATASETS:
        register_benchmark(f"nasbench_graph/{ds}", functools.partial(nasbench_graph.load, ds))
    for metric in analog_nasbench.METRICS:
        register_benchmark(f"analognas/{metric}", functools.partial(analog_nasbench.load, metric))
    for ds in MLP_DATASETS:
        files = {"data_path": f"uci_{ds}"} if ds != "diabetes" else None  # diabetes: scikit-learn's copy
        register_benchmark(f"mlp/{ds}", functools.partial(_load_mlp, ds), files)
    register_benchmark("nb101", _load_nb101, {"data_path": "nb101"})
    register_benchmark("nb101/data1k", _load_nb101_data1k, {"data_path": "nb101_data1k"})


_register_builtin()


def available_benchmarks() -> list[str]:
    return sorted(BENCHMARKS)


def benchmark_options(name: str) -> list[str]:
    """The keyword options of benchmark ``name``'s loader."""
    loader = lookup("benchmark", name, BENCHMARKS)
    params = inspect.signature(loader).parameters.values()
    return [p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "dataset"]


def make_benchmark(name: str, **kwargs):
    """Loads benchmark ``name`` with its loader's options (unknown names/options fail with the valid ones);
    an optional public file left empty is taken from the data directory where it is there."""
    loader = lookup("benchmark", name, BENCHMARKS)
    allowed = benchmark_options(name)
    bad = [k for k in kwargs if k not in allowed]
    if bad:
        raise ValueError(f"benchmark {name!r} has no option(s) {bad}; its options are {allowed}")
    return loader(**{**kwargs, **found_data_files(name, **kwargs)})
