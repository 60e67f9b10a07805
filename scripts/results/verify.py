"""``python -m scripts.results verify``: does a rerun give the figures a results file reports?

    python -m scripts.results verify table3 --workdir "NB201 cifar10=/tmp/t3_c10" \
        --row "AlphaX, c = 0.1 (default)=alphax" [--table main] [--write --command "python -m ..."]

Each ``--workdir COLUMN=WORKDIR[:QUERIES]`` maps one column of the table to a finished ``scripts.train``
workdir; each row is the summary's searcher of the same name (``random search`` is ``random_search``,
``ReMAADE`` is ``remaade``, ``default (`remaade`)`` too) or the one ``--row LABEL=SEARCHER`` names. A
cell is read at ``QUERIES``, or the count its column names (``50 queries``, ``50 q``), or the full budget
(a multi-fidelity searcher: at the compute of the full budget). A column named ``25 %`` is read at that
share of the budget (the compute of 25 % of the full trainings; a multi-objective run's hypervolume gap),
one named ``(x1e-5)`` in those units. A reported figure is reproduced when the run's mean (and spread)
rounds to it at the decimals it was reported with; the run must have the trials the cell reports. A
table whose spread is "se" is compared with the std over the square root of them; a spread is
reproduced as the population std (``summary.json``'s) or the sample one (n - 1).

``--write`` makes the file the rerun's: differing cells take the run's values (at the same digits), and
``run`` its date, machine, versions (or ``--versions-file constraints-results.txt`` where that file pins
the installed ones) and ``--command``, with a ``source`` that says what was reproduced.
Cells no workdir covers stay as they were, and the ``source`` says so (a column of ``--quoted`` figures,
a paper's, is no cell of the run's).
"""

from __future__ import annotations

import argparse
import math
import re
from dataclasses import dataclass
from pathlib import Path

from scripts.results import importing, render, source
from scripts.results.source import ResultsError

VERSIONED = ("jax", "jaxlib", "flax", "optax", "numpy")
FIGURE = re.compile(r"^\s*([-+]?\d+(?:\.\d+)?)(?:\s*±\s*(\d+(?:\.\d+)?))?(\s*\([^()]*\))?\s*$")
UNITS = re.compile(r"\(x\s*(1e-?\d+)\)")
QUERIES = re.compile(r"(\d+) (?:queries|evaluations|q)\b")
PERCENT = re.compile(r"(\d+) %")
NAMED = re.compile(r"`([a-z0-9_]+)(?:<[A-Z]+>)?`")


@dataclass
class Cell:
    row: int  # 1-based, as --check names them
    column: int
    label: str
    header: str
    reported: str  # the figure as the file holds it
    run_mean: float
    run_spread: float
    same: bool


def decimals(text: str) -> int:
    return len(text.split(".")[1]) if "." in text else 0


def figure(cell) -> tuple[str, str | None] | None:
    """(mean, spread) of a reported cell as the texts it was reported with; None when it holds no figure."""
    if isinstance(cell, dict):
        return repr(float(cell["mean"])), repr(float(cell["spread"])) if "spread" in cell else None
    if isinstance(cell, (int, float)):
        return repr(float(cell)), None
    m = FIGURE.match(cell)  # "3.531 ± 0.032" or "3.531 ± 0.032 (39 %)": the note is not compared
    return (m.group(1), m.group(2)) if m else None


def rounds_to(value: float, text: str) -> bool:
    d = decimals(text)
    return math.isfinite(value) and f"{value:.{d}f}" == f"{float(text):.{d}f}"


def parse_pairs(pairs: list[str], what: str) -> list[tuple[str, str]]:
    out = []
    for pair in pairs:
        key, sep, value = pair.rpartition("=")
        if not sep or not key or not value:
            raise ResultsError(f"--{what} {pair!r}: write {what.upper()} as NAME=VALUE (the column or row label first)")
        out.append((key, value))
    return out


def searcher_key(label: str) -> str:
    """The searcher a row label names: ``default (`remaade`)`` is remaade, ``random search`` random_search."""
    named = NAMED.search(label)
    return named.group(1) if named else re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")


def share_figure(summary: dict, searcher: str, fraction: float) -> tuple[float, float, int]:
    """(mean, std, trials) at ``fraction`` of the budget: a multi-objective run's hypervolume gap (%), else
    the reported metric of the incumbent whose compute fits in that share of the budget."""
    if "pareto" not in summary:
        s = summary["searchers"][searcher]
        b = s["budget"]
        i = [round(f, 6) for f in b["fractions"]].index(round(fraction, 6))
        return b["mean"][i], b["std"][i], int(s["num_trials"])
    s = summary["pareto"]["searchers"][searcher]
    i = [round(f, 6) for f in s["fractions"]].index(round(fraction, 6))
    n = int(s["num_trials"])
    return s["gap"]["mean"][i], s["gap"]["se"][i] * math.sqrt(n), n  # the summary holds the s.e.


def run_figure(summary: dict, searcher: str, queries: int | None) -> tuple[float, float, int]:
    """(mean, std, trials) of ``searcher`` in ``summary`` at ``queries`` (None: the full budget)."""
    s = summary["searchers"][searcher]
    if queries is None and s.get("multi_fidelity"):
        b = s["budget"]
        i = b["fractions"].index(1.0)
        return b["mean"][i], b["std"][i], int(s["num_trials"])
    q = int(summary["max_queries"]) if queries is None else queries
    if q not in s["queries"]:
        raise ResultsError(f"the run reports {searcher} at queries {s['queries']}, not at {q}: give COLUMN=WORKDIR:Q")
    i = s["queries"].index(q)
    mean, std = s["mean"][i], s["std"][i]
    return (math.nan if mean is None else mean), (math.nan if std is None else std), int(s["num_trials"])


def compare(
    data: dict, table: dict, workdirs: list[tuple[str, str]], rows: dict[str, str]
) -> tuple[list[Cell], list[str]]:
    """Every cell a workdir covers, compared (a column's first workdir that has the row's searcher); and a
    line for each cell that could not be compared."""
    header = table["columns"]
    unknown = [c for c, _ in workdirs if c not in header]
    if unknown:
        raise ResultsError(f"--workdir names column {unknown[0]!r}; the table's columns are {header}")
    unknown = [r for r in rows if r not in [row[0] for row in table["rows"]]]
    if unknown:
        raise ResultsError(f"--row names row {unknown[0]!r}; the table's rows are {[row[0] for row in table['rows']]}")
    cells, skipped, trials, done = [], [], [], set()
    trials_default = render.table_run(table, data["run"])["trials"]  # a cell without its own n is over these
    for column, spec in workdirs:
        path, _, q = spec.partition(":")
        summary = importing._read_json(Path(path) / "summary.json", "give the workdir of a finished scripts.train run")
        c = header.index(column)
        named, percent = QUERIES.search(column), PERCENT.search(column)
        queries = int(q) if q else int(named.group(1)) if named else None
        units = UNITS.search(column)
        scale = 1 / float(units.group(1)) if units else 1.0
        for r, row in enumerate(table["rows"]):
            label = str(row[0])
            searcher = rows.get(label, searcher_key(label))
            if (r, c) in done:
                continue
            if searcher not in (summary.get("pareto", summary) if percent and not q else summary)["searchers"]:
                continue
            reported = figure(row[c])
            if reported is None:
                skipped.append(f"row {label!r} column {column!r}: reports {row[c]!r}, no figure to compare")
                done.add((r, c))
                continue
            if percent and not q:
                mean, std, n = share_figure(summary, searcher, int(percent.group(1)) / 100)
            else:
                mean, std, n = run_figure(summary, searcher, queries)
            want = row[c].get("n", trials_default) if isinstance(row[c], dict) else trials_default
            if n != want:
                trials.append(((r, c), f"row {label!r} column {column!r}: reported over {want} trials, {path} has {n}"))
                continue
            mean, std = mean * scale, std * scale / (math.sqrt(n) if table["spread"] == "se" else 1)
            sample = std * math.sqrt(n / (n - 1)) if n > 1 else std  # the spread as reported with ddof=1
            same = rounds_to(mean, reported[0]) and (
                reported[1] is None or rounds_to(std, reported[1]) or rounds_to(sample, reported[1])
            )
            text = reported[0] + (f" ± {reported[1]}" if reported[1] else "")
            cells.append(Cell(r + 1, c + 1, label, column, text, mean, std, same))
            done.add((r, c))
    for at, line in trials:  # another run of the column may have the trials reported
        if at not in done:
            skipped.append(line)
            done.add(at)
    for column in dict(workdirs):
        c = header.index(column)
        for r, row in enumerate(table["rows"]):
            if (r, c) not in done:
                searcher = rows.get(str(row[0]), searcher_key(str(row[0])))
                skipped.append(f"row {row[0]!r} column {column!r}: no searcher {searcher!r} in its workdirs")
    return cells, skipped


def rewritten(cell, mean: float, std: float):
    """``cell`` holding the run's figures, printed as the reported one was."""
    if isinstance(cell, dict):
        new = {**cell, "mean": importing._significant(mean)}
        if "spread" in cell:
            new["spread"] = importing._significant(std)
        return new
    m, s = figure(cell)
    text = f"{mean:.{decimals(m)}f}" + (f" ± {std:.{decimals(s)}f}" if s is not None else "")
    return text + (FIGURE.match(cell).group(3) or "")


def reported_on(run: dict) -> str:
    """The date the figures were first reported (an earlier verification keeps it in its source); "" if unknown."""
    earlier = re.search(r"reported on (\d{4}-\d{2}-\d{2})", run["source"])
    if earlier:
        return earlier.group(1)
    date = re.search(r"\d{4}-\d{2}-\d{2}", run["date"])
    return date.group(0) if date else ""


def earlier_source(run: dict) -> str:
    """Where the cells not rerun come from (after an earlier verification: what it said of them)."""
    return run["source"].split("; the other cells: ", 1)[-1]


def source_text(date: str, old_run: dict, cells: list[Cell], table: dict, covered_all: bool) -> str:
    on = reported_on(old_run)
    on = f"on {on}" if on else "before (date not recorded)"
    differing = [c for c in cells if not c.same]
    if differing:
        where = "; ".join(f"{c.label} / {c.header}" for c in differing)
        text = f"run {date}: differs from the figure reported {on} in {where}"
    elif covered_all:
        text = f"run {date}: reproduced every cell reported {on}"
    else:
        columns = ", ".join(dict.fromkeys(c.header for c in cells))
        rows = ", ".join(dict.fromkeys(c.label for c in cells))
        text = f"run {date}: reproduced every cell rerun ({len(cells)}: {columns}; rows {rows}) reported {on}"
    if not covered_all:
        text += f"; the other cells: {earlier_source(old_run)}"
    return text


def pinned_versions(path: str) -> str:
    """``path`` when it pins the installed versions of ``VERSIONED`` (``name==version`` lines), for ``versions``."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise ResultsError(f"--versions-file {path}: {e.strerror}; give the run's constraints file") from None
    pins = dict(p.split("==", 1) for p in (line.split("#")[0].strip().lower() for line in lines) if "==" in p)
    for package, version in importing.versions(VERSIONED).items():
        if pins.get(package) != version:
            raise ResultsError(f"--versions-file {path} pins {package} {pins.get(package, '(nothing)')}, the run had "
                               f"{version}: leave the flag out to record the installed versions")  # fmt: skip
    return Path(path).name


def verify(args) -> int:
    folder = Path(args.results_dir)
    data = source.load(args.name, folder)
    table_name, table = source.table_of(data, args.name, args.table)
    workdirs = parse_pairs(args.workdir, "workdir")
    cells, skipped = compare(data, table, workdirs, dict(parse_pairs(args.row, "row")))
    for c in cells:
        verdict = "reproduced" if c.same else "DIFFERS"
        print(f"results/{args.name}.json {table_name} row {c.row} column {c.column} ({c.label} / {c.header}): "
              f"reported {c.reported}, run {c.run_mean:.6g} ± {c.run_spread:.4g}: {verdict}")  # fmt: skip
    for line in skipped:
        print(f"not compared: {line}")
    differing = sum(not c.same for c in cells)
    print(f"{len(cells) - differing} of {len(cells)} cells reproduced, {len(skipped)} not compared")
    if not args.write:
        return 1 if differing or not cells else 0
    if not cells:
        raise ResultsError("no cell was compared: nothing to write (check --workdir and --row)")
    if not args.command:
        raise ResultsError("--write needs --command: the exact command(s) of the rerun, as a user would type them")
    for c in cells:
        if not c.same:
            table["rows"][c.row - 1][c.column - 1] = rewritten(table["rows"][c.row - 1][c.column - 1],
                                                              c.run_mean, c.run_spread)  # fmt: skip
    quoted = [table["columns"].index(c) for c in args.quoted if c in table["columns"]]
    if len(quoted) != len(args.quoted):
        raise ResultsError(f"--quoted names a column not in the table; its columns are {table['columns']}")
    run_cells = [cell for row in table["rows"] for c, cell in enumerate(row) if c and c not in quoted]
    figures = sum(figure(cell) is not None for cell in run_cells)
    covered_all = len(data["tables"]) == 1 and len(cells) == figures
    date = max(importing.file_date(Path(p.partition(":")[0]) / "summary.json") for _, p in workdirs)
    old = dict(data["run"])
    data["run"].update(
        command=args.command,
        machine=importing.machine(args.machine_note),
        date=date,
        versions=pinned_versions(args.versions_file) if args.versions_file else importing.versions(VERSIONED),
        source=source_text(date, old, cells, table, covered_all),
    )
    source.check(data, f"results/{args.name}.json")
    print(f"wrote {importing.write(data, args.name, folder)}")
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m scripts.results verify", description=__doc__.split("\n\n")[0])
    p.add_argument("name", help="the results file: results/NAME.json")
    p.add_argument("--results-dir", default=str(source.RESULTS_DIR), help="where the results files are")
    p.add_argument("--table", default=None, help="the table of the file (default: its only table or 'main')")
    p.add_argument("--workdir", action="append", default=[], required=True,
                   help="COLUMN=WORKDIR[:QUERIES]: the column a finished scripts.train workdir reruns (repeat it: "
                   "a column's rows may come from several runs)")  # fmt: skip
    p.add_argument("--row", action="append", default=[], help="LABEL=SEARCHER: the summary's searcher of a row")
    p.add_argument("--quoted", action="append", default=[],
                   help="COLUMN: quotes figures of another source (a paper's), no run of this file's")  # fmt: skip
    p.add_argument("--write", action="store_true", help="write the rerun's facts (and differing cells) into the file")
    p.add_argument("--command", default="", help="with --write: the command(s) of the rerun")
    p.add_argument("--versions-file", default="", help="with --write: record this constraints file (it must pin "
                   "the installed versions) instead of the versions")  # fmt: skip
    p.add_argument("--machine-note", default="", help="with --write: added to the machine, e.g. 'load ~6'")
    return p


def main(argv: list[str]) -> int:
    return verify(parser().parse_args(argv))


if __name__ == "__main__":  # pragma: no cover
    import sys

    sys.exit(main(sys.argv[1:]))
