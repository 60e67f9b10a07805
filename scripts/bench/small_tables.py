"""The small tables of the compile benches: docs/tutorials/extending.md's ``my/mlp`` (24 rows) and its plain grid.

``byo24``: all 24 configurations of two commuting layer widths (``canonical=``: 36 strings, 24 networks),
``grid36``: the same space without ``canonical=`` (a plain 36-string grid); seeded made-up scores, since only
the programs matter (``scripts.bench.bench_small_table``, ``scripts.bench.bench_compile``). Any other name is a
registered benchmark.
"""

from __future__ import annotations

SMALL_TABLES = ("byo24", "grid36")
VALUES = {"width1": [64, 128, 256], "width2": [64, 128, 256], "lr": [0.001, 0.01], "act": ["relu", "gelu"]}


def same_pair(spec):
    a, b = sorted([spec["width1"], spec["width2"]])
    return {**spec, "width1": a, "width2": b}


def table(name: str):
    import itertools

    import numpy as np

    from spaces.base import CategoricalSpace
    from spaces.benchmarks.registry import make_benchmark
    from spaces.benchmarks.tabular import TabularBenchmark

    if name not in SMALL_TABLES:
        return make_benchmark(name)
    space = CategoricalSpace("my_mlp" if name == "byo24" else "grid", VALUES, same_pair if name == "byo24" else None)
    rng = np.random.default_rng(0)
    rows = {}
    for t in itertools.product(*(range(len(v)) for v in VALUES.values())):
        if name == "byo24" and t[0] > t[1]:
            continue  # (256, 64) is (64, 256)
        rows[t] = {"valid": (90 + rng.normal(size=2)).tolist(), "test": float(89 + rng.normal()), "cost": 10.0}
    return TabularBenchmark.from_dict(name=f"my/{name}", space=space, table=rows, report_kind="acc_pct")
