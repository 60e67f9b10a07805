"""Results files written from a run's own outputs, so a figure is never typed by hand.

``from_workdir``: a ``scripts.train`` workdir's ``summary.json`` (``nas.experiment.report.build_summary``) and
``config.json`` become one table: every searcher's reported metric at the full budget, mean ± the population
std over trials, as ``summary.json`` holds them. ``from_tuner_bench``: ``scripts.bench.bench_tuner --json``'s
figures become its table (one run per row, no spread).
"""

from __future__ import annotations

import datetime
import json
import math
import os
import platform
from importlib import metadata
from pathlib import Path

from scripts.results import source
from scripts.results.source import ResultsError
from spaces.files import write_text_atomic

PACKAGES = ("jax", "flax", "optax", "numpy")


def versions(packages: tuple[str, ...] = PACKAGES) -> dict[str, str]:
    """The installed versions of the packages the figures depend on."""
    out = {}
    for package in packages:
        try:
            out[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            out[package] = "not installed"
    return out


def machine(note: str = "") -> str:
    """Platform, CPU count and JAX's device kind of this machine (``note`` appended, e.g. how loaded it was)."""
    import jax  # only here: rendering pages never imports JAX

    device = jax.devices()[0]
    text = f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPU cores, JAX device {device.device_kind}"
    return f"{text}; {note}" if note else text


def file_date(path: Path) -> str:
    """The UTC date a file was last written (when its run finished)."""
    return datetime.datetime.fromtimestamp(Path(path).stat().st_mtime, datetime.timezone.utc).date().isoformat()


def _read_json(path: Path, what: str) -> dict:
    if not path.is_file():
        raise ResultsError(f"no {path}: {what}")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ResultsError(f"{path} is not JSON (line {e.lineno}: {e.msg}): rerun the run that writes it") from None


def _significant(x: float) -> float:
    return float(f"{x:.6g}")


def from_workdir(
    workdir: str,
    title: str = "",
    command: str = "",
    digits: int = 3,
    machine_note: str = "",
    queries: tuple[int, ...] = (),
) -> dict:
    """The results file of a finished ``scripts.train`` run in ``workdir``: one column per query count of
    ``queries`` (each one the summary reports; default: the full budget only)."""
    wd = Path(workdir)
    summary_path = wd / "summary.json"
    summary = _read_json(summary_path, "give the workdir of a finished run (python -m scripts.train ... --workdir)")
    config = _read_json(wd / "config.json", "the workdir lacks the config of its run: rerun it with scripts.train")
    command = command or config.get("command") or summary.get("command") or ""
    if not command:
        raise ResultsError(
            f"{wd} does not record the command that ran it: give --command 'python -m scripts.train --config "
            "configs/<file>.py <overrides>'"
        )
    budget = int(summary["max_queries"])
    columns = [int(q) for q in queries] or [budget]
    rows, trials = [], int(config.get("num_trials") or 0)
    for label, s in summary["searchers"].items():
        row = [label]
        for q in columns:
            if q not in s["queries"] and q != budget:
                raise ResultsError(f"{summary_path} reports {label} at queries {s['queries']}, not at {q}: give "
                                   "--queries among them")  # fmt: skip
            i = s["queries"].index(q) if q in s["queries"] else len(s["queries"]) - 1
            mean, std = s["mean"][i], s["std"][i]
            if mean is None or not math.isfinite(mean):
                row.append("-")  # no incumbent at that budget in any trial
                continue
            n = int(s["num_trials"])
            row.append({"mean": _significant(mean), "spread": _significant(std), "digits": digits, "n": n})
            trials = trials or n
        rows.append(row)
    queries = budget
    metric = summary["metric"]
    date = file_date(summary_path)
    data = {
        "title": title or f"{summary['benchmark']}: {metric} at {queries} queries",
        "run": {
            "command": command,
            "protocol": summary["protocol"] or "n/a",
            "seed": int(config.get("seed", 0)),
            "trials": trials or 1,
            "machine": machine(machine_note),
            "date": date,
            "versions": versions(),
            "source": f"run {date}",
        },
        "tables": {
            "main": {
                "caption": f"{summary['benchmark']}, {queries} queries; {summary['note']}.",
                "spread": "std",
                "columns": [
                    "searcher",
                    *(f"{metric} at {q} queries" if len(columns) == 1 else f"{q} queries" for q in columns),
                ],
                "rows": rows,
            }
        },
    }
    source.check(data, f"the results of {wd}")
    return data


TUNER_COLUMNS = (
    ("first_s", "first ask, from process start s", 2),
    ("step_ms", "median ask+tell ms", 2),
    ("wall_s", "whole process wall s", 2),
    ("cpu_s", "CPU s", 2),
    ("rss_mb", "peak RSS MB", 0),
)


GOAL_COLUMNS = {"first_s": "first ask s", "step_ms": "ask+tell ms", "rss_mb": "peak RSS MB"}  # what the goals name


def goal_row(label: str) -> bool:
    """A row the start-up goals compare: the references and the warm processes (TPE's is not in the goals, nor
    the one-core rows: a check that nothing waits for a second core)."""
    warm = label.startswith("nasjax") and label.endswith("warm cache") and "TPE" not in label
    return warm or label in ("import jax only", "Optuna RandomSampler")


def goal_rows(rows: list) -> list:
    """The goals' rows of the bench's table, with the goals' columns (a short table for the README)."""
    places = [1 + [k for k, _, _ in TUNER_COLUMNS].index(k) for k in GOAL_COLUMNS]
    return [[r[0].replace("nasjax ", "").replace("regularized ", "").replace(", warm cache", ", warm"),
             *(r[i] for i in places)]
            for r in rows if goal_row(r[0])]  # fmt: skip


def from_tuner_bench(path: str, title: str = "", command: str = "", machine_note: str = "") -> dict:
    """The results file of ``python -m scripts.bench.bench_tuner --json=PATH``."""
    bench = _read_json(Path(path), "run python -m scripts.bench.bench_tuner --json=PATH first")
    if not {"trials", "replay", "rows"} <= set(bench):
        raise ResultsError(f"{path} is not scripts.bench.bench_tuner's JSON (it has trials, replay and rows)")
    rows = []
    for label, r in bench["rows"].items():
        row = [label]
        for key, _, digits in TUNER_COLUMNS:
            if key == "first_s" and "replay_s" in r:
                row.append(f"{r['replay_s']:.2f} (replay)")
            else:
                row.append({"mean": _significant(r[key]), "digits": digits} if key in r else "")
        row.append({"mean": r["cache_files"], "digits": 0} if "cache_files" in r else "")
        rows.append(row)
    load = max(r["load"] for r in bench["rows"].values())
    date = file_date(Path(path))
    runs = bench.get("runs", 1)
    each = "one process per row" if runs == 1 else f"each figure the median of {runs} processes per row"
    note = f"{bench['trials']} sequential ask+tell per process, {each}"
    one_core = any(label.endswith("one core") for label in bench["rows"])
    workers = "".join(
        f" {label.split(', ')[1]}: the first column is the first result's arrival from the process's launch, the "
        "workers' start-up included."
        for label in bench["rows"]
        if "process workers" in label
    )
    data = {
        "title": title or "The tuner's start-up and overhead, side by side with Optuna",
        "run": {
            "command": command or "python -m scripts.bench.bench_tuner",
            "protocol": "n/a",
            "seed": 0,
            "trials": 1,
            "machine": machine("; ".join(filter(None, [machine_note, f"load average up to {load:.1f}"]))),
            "date": date,
            "versions": versions(),
            "source": f"run {date}",
        },
        "tables": {
            "main": {
                "caption": f"{note}. Study.load replays a {bench['replay']}-trial journal." + workers
                + (" One core: the warm process with its CPU affinity set to one CPU before JAX starts." if one_core
                   else ""),  # fmt: skip
                "spread": None,
                "columns": ["", *(name for _, name, _ in TUNER_COLUMNS), "cache files after"],
                "rows": rows,
            },
            "goals": {
                "caption": f"{bench['trials']} ask+tell per process; "
                + ("one process per row." if runs == 1 else f"medians of {runs} processes."),
                "spread": None,
                "columns": ["", *GOAL_COLUMNS.values()],
                "rows": goal_rows(rows),
            },
        },
    }
    source.check(data, f"the results of {path}")
    return data


def dumps(data: dict) -> str:
    """The file's text: two-space indents, one line per table row (diffs show the rows that changed)."""
    marks, copy = {}, json.loads(json.dumps(data))
    for t, table in enumerate(copy["tables"].values()):
        for r, row in enumerate(table["rows"]):
            key = f"@row{t}.{r}@"
            marks[json.dumps(key)] = json.dumps(row, ensure_ascii=False)
            table["rows"][r] = key
    text = json.dumps(copy, indent=2, ensure_ascii=False)
    for key, row in marks.items():
        text = text.replace(key, row, 1)
    return text + "\n"


def write(data: dict, name: str, folder: Path = source.RESULTS_DIR) -> Path:
    if not source.NAME.match(name):
        raise ResultsError(f"--name {name!r}: use lowercase letters, digits and _ (the file results/<name>.json)")
    path = source.results_path(name, folder)
    Path(folder).mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, dumps(data))
    return path
