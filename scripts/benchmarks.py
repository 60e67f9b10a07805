"""List every registered tabular benchmark: size, seeds, best validation entry.

    python -m scripts.benchmarks [--json] [--names=nb201/cifar10,hpolib/protein_structure]
        [--nb201_test_csv=../shared/data/nb201/nats_bench_test_acc.csv] [--nb101_data=PATH]
        [--nb101_data1k=../shared/data/nb101/data-1k.json]

For each benchmark: the number of table rows, the number of seed columns,
the best seed-mean validation score (raw score as searchers see it, and in
reported units, e.g. error %), and the test score of that best-validation
row (seed mean; "-"/null where the table has no test split). NB201 has a test
split only with ``--nb201_test_csv``; ``nb101`` needs ``--nb101_data`` (the
official tfrecord or its converted cache) and ``nb101/data1k`` needs
``--nb101_data1k`` (nasbench-vis' data-1k.json); otherwise they are listed as
needing them. ``--json`` prints one JSON object per benchmark per line, with keys
``name``, ``size``, ``num_seeds``, ``metric`` (reported units, and whether there
is a test split), ``best_valid`` / ``test_of_best_valid`` (reported units, e.g.
error %; test null without a test split), ``best_valid_score`` /
``test_of_best_valid_score`` (the raw scores searchers see), ``best_valid_spec``,
``load_s`` and ``status`` ("ok", or why the table was not loaded). Ties in
validation are broken by the lower table row.
"""

from __future__ import annotations

import json
import os
import time

import numpy as np
from absl import app, flags

from nas.experiment import cli
from spaces.benchmarks.objective import REPORTS
from spaces.benchmarks.registry import available_benchmarks, make_benchmark
from spaces.benchmarks.tabular import TabularBenchmark
from spaces.names import unknown

_JSON = flags.DEFINE_bool("json", False, "One JSON object per benchmark per line.")
_NAMES = flags.DEFINE_list("names", [], "Benchmark names to list (default: all).")
_NB201_TEST_CSV = flags.DEFINE_string("nb201_test_csv", "", "NB201 test CSV (default: none, no NB201 test split).")
_NB101_DATA = flags.DEFINE_string("nb101_data", "", "NAS-Bench-101 tfrecord or its converted .npz cache.")
_NB101_DATA1K = flags.DEFINE_string("nb101_data1k", "", "nasbench-vis data-1k.json (1,000 NAS-Bench-101 cells).")

# what the raw score means, per report kind
SCORE_NAMES = {
    "acc_pct": "accuracy (%)",
    "acc_frac": "accuracy (fraction)",
    "neg_log_mse": "-log(MSE)",
    "auc_frac": "ROC-AUC (fraction)",
}


def summarize(bench: TabularBenchmark) -> dict:
    """Best seed-mean validation row and its test score, raw and in reported units."""
    mv = np.asarray(bench.mean_valid(), np.float64)
    i = int(np.argmax(mv))
    test = float(np.asarray(bench.test)[i]) if bench.has_test else None
    unit = REPORTS[bench.report_kind][1]
    return {
        "size": bench.size,
        "num_seeds": bench.num_seeds,
        "metric": f"validation {unit}" + (f"; test {unit}" if bench.has_test else "; no test split"),
        "score": SCORE_NAMES[bench.report_kind],
        "has_test": bench.has_test,
        "best_valid": float(bench.report(mv[i])),
        "best_valid_score": float(mv[i]),
        "test_of_best_valid": None if test is None else float(bench.report(test)),
        "test_of_best_valid_score": test,
        "best_valid_spec": _row_spec(bench, i),
    }


def _row_spec(bench: TabularBenchmark, row: int):
    """Readable spec of table row ``row``; None where ids are not invertible (NB101 codes)."""
    sp = bench.space
    if hasattr(sp, "canon"):  # NAS-Bench-Graph: ids are rows, canonical strings kept
        return sp.to_spec(sp.canon[row])
    if np.asarray(bench.row_ids).size:
        return None
    tokens, sid = [], row  # dense grid: the row is the mixed-radix number of the string
    for c in sp.cardinalities[::-1]:
        tokens.append(sid % c)
        sid //= c
    return sp.to_spec(np.asarray(tokens[::-1], np.int32))


def benchmark_kwargs(name: str, paths: dict[str, str]) -> dict:
    if name.startswith("nb201/") and paths.get("nb201_test_csv"):
        return {"test_csv": paths["nb201_test_csv"]}
    if name == "nb101":
        return {"data_path": paths.get("nb101_data", "")}
    if name == "nb101/data1k":
        return {"data_path": paths.get("nb101_data1k", "")}
    return {}


def unavailable(name: str, paths: dict[str, str]) -> str | None:
    """Why ``name`` is not loaded in this listing (None: load it)."""
    if name.startswith("mlp/"):
        return "a training objective, not a table (spaces/benchmarks/mlp_training.py; docs/research/hpo.md)"
    if name == "nb101" and not paths.get("nb101_data"):
        return "needs --nb101_data (official nasbench_only108.tfrecord or its converted cache)"
    if name == "nb101/data1k" and not paths.get("nb101_data1k"):
        return "needs --nb101_data1k (data-1k.json of github.com/tiga1231/nasbench-vis)"
    return None


def listing(names: list[str], paths: dict[str, str], as_json: bool = False) -> list[dict]:
    """One row per benchmark (loaded, or the reason it is not); raises ValueError on unknown names,
    missing files or bad data, naming the benchmark and the problem."""
    known = available_benchmarks()
    names = names or known
    bad = [n for n in names if n not in known]
    if bad:
        raise ValueError("; ".join(unknown("benchmark", n, known) for n in bad))
    for flag, path in paths.items():
        if path and not os.path.exists(path):
            raise ValueError(f"--{flag}={path}: no such file")
    rows = []
    for name in names:
        why = unavailable(name, paths)
        if why:
            empty = dict.fromkeys(("size", "num_seeds", "metric", "best_valid", "test_of_best_valid"))
            rows.append({"name": name, **empty, "status": why})
        else:
            t0 = time.perf_counter()
            try:
                bench = make_benchmark(name, **benchmark_kwargs(name, paths))
            except (ValueError, OSError, ImportError) as e:  # bad or missing data: say which and why
                raise ValueError(f"cannot load {name}: {e}") from e
            rows.append(
                {"name": name, **summarize(bench), "load_s": round(time.perf_counter() - t0, 3), "status": "ok"}
            )
        if as_json:
            print(json.dumps(rows[-1]), flush=True)
    return rows


def main(argv) -> int:
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    paths = {
        "nb201_test_csv": _NB201_TEST_CSV.value,
        "nb101_data": _NB101_DATA.value,
        "nb101_data1k": _NB101_DATA1K.value,
    }
    try:
        rows = listing(_NAMES.value, paths, as_json=_JSON.value)
    except cli.DataError:
        raise  # data error: <file>: ...
    except ValueError as e:
        raise cli.ConfigError(str(e)) from e
    if not _JSON.value:
        print_table(rows)
    return 0


def _fmt(x, score_kind: str = "") -> str:
    if x is None:
        return "-"
    if score_kind == "neg_log_mse" or abs(x) < 1e-2:
        return f"{x:.4g}"
    return f"{x:.2f}"


def print_table(rows: list[dict]) -> None:
    head = ("benchmark", "size", "seeds", "reported metric", "best valid", "(score)", "test of best", "load s")
    lines = [head]
    for r in rows:
        if r["status"] != "ok":
            lines.append((r["name"], "-", "-", r["status"], "", "", "", ""))
            continue
        unit = r["metric"].split(";")[0].replace("validation ", "")
        lines.append(
            (
                r["name"],
                f"{r['size']:,}",
                str(r["num_seeds"]),
                unit,
                _fmt(r["best_valid"], "neg_log_mse" if unit == "MSE" else ""),
                f"{r['best_valid_score']:.4f} {r['score']}",
                _fmt(r["test_of_best_valid"]),
                f"{r['load_s']:.2f}",
            )
        )
    loaded = [line for line in lines if line[1] != "-"]
    widths = [max(len(str(line[c])) for line in lines if line[1] != "-" or c == 0) for c in range(len(head))]
    for line in lines:
        if line in loaded:
            print("  ".join(f"{str(v):<{w}}" for v, w in zip(line, widths)).rstrip())
        else:  # not loaded: name and the reason
            print(f"{line[0]:<{widths[0]}}  {line[3]}")


if __name__ == "__main__":
    cli.run(main)
