"""List every registered tabular benchmark: size, seeds, best validation entry.

    python -m scripts.benchmarks [--json] [--names nb201/cifar10,hpolib/protein_structure]
        [--nb201-test-csv ../shared/data/nb201/nats_bench_test_acc.csv] [--nb101-data PATH]

For each benchmark: the number of table rows, the number of seed columns,
the best seed-mean validation score (raw score as searchers see it, and in
reported units, e.g. error %), and the test score of that best-validation
row (seed mean; "-"/null where the table has no test split). NB201 has a test
split only with ``--nb201-test-csv``; ``nb101`` needs ``--nb101-data`` (the
official tfrecord or its converted cache) and is otherwise listed as needing
it; ``nb101/data1k`` is listed when ``../shared/data/nb101/data-1k.json``
exists. ``--json`` prints one JSON object per benchmark per line, with keys
``name``, ``size``, ``num_seeds``, ``metric`` (reported units, and whether there
is a test split), ``best_valid`` / ``test_of_best_valid`` (reported units, e.g.
error %; test null without a test split), ``best_valid_score`` /
``test_of_best_valid_score`` (the raw scores searchers see), ``best_valid_spec``,
``load_s`` and ``status`` ("ok", or why the table was not loaded). Ties in
validation are broken by the lower table row.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from spaces.registry import SHARED_DATA, available_benchmarks, make_benchmark
from spaces.tabular import REPORTS, TabularBenchmark

# what the raw score means, per report kind
SCORE_NAMES = {
    "acc_pct": "accuracy (%)",
    "acc_frac": "accuracy (fraction)",
    "neg_log_mse": "-log(MSE)",
    "auc_frac": "ROC-AUC (fraction)",
}
DATA1K = SHARED_DATA / "nb101" / "data-1k.json"


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


def benchmark_kwargs(name: str, args) -> dict:
    if name.startswith("nb201/") and args.nb201_test_csv:
        return {"test_csv": args.nb201_test_csv}
    if name == "nb101":
        return {"data_path": args.nb101_data}
    return {}


def unavailable(name: str, args) -> str | None:
    """Why ``name`` is not loaded in this listing (None: load it)."""
    if name == "nb101" and not args.nb101_data:
        return "needs --nb101-data (official nasbench_only108.tfrecord or its converted cache)"
    if name == "nb101/data1k" and not DATA1K.exists():
        return f"needs {DATA1K} (see shared/data/README.md)"
    return None


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--json", action="store_true", help="one JSON object per benchmark per line")
    ap.add_argument("--names", default="", help="comma-separated subset of benchmark names (default: all)")
    ap.add_argument("--nb201-test-csv", default="", help="NB201 test CSV (default: none, NB201 has no test split)")
    ap.add_argument("--nb101-data", default="", help="NAS-Bench-101 tfrecord or converted .npz cache")
    args = ap.parse_args(argv)
    known = available_benchmarks()
    names = [n.strip() for n in args.names.split(",") if n.strip()] or known
    bad = [n for n in names if n not in known]
    if bad:
        ap.error(f"unknown benchmark(s) {bad}; registered: {', '.join(known)}")
    for flag, path in (("--nb201-test-csv", args.nb201_test_csv), ("--nb101-data", args.nb101_data)):
        if path and not os.path.exists(path):
            ap.error(f"{flag} {path}: no such file")
    return args, names


def main(argv=None) -> int:
    args, names = parse_args(argv)
    rows = []
    for name in names:
        why = unavailable(name, args)
        if why:
            empty = dict.fromkeys(("size", "num_seeds", "metric", "best_valid", "test_of_best_valid"))
            rows.append({"name": name, **empty, "status": why})
        else:
            t0 = time.perf_counter()
            try:
                bench = make_benchmark(name, **benchmark_kwargs(name, args))
            except (ValueError, OSError, ImportError) as e:  # bad or missing data: say which and why
                print(f"error: cannot load {name}: {e}", file=sys.stderr)
                return 2
            row = {"name": name, **summarize(bench), "load_s": round(time.perf_counter() - t0, 3), "status": "ok"}
            rows.append(row)
        if args.json:
            print(json.dumps(rows[-1]), flush=True)
    if not args.json:
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
    sys.exit(main())
