"""A results file, ``results/<name>.json``: read and checked before anything is rendered.

Every mistake is a ``ResultsError`` whose one line names the file (and the table, row and column) and
says what to write instead. The format is described in ``results/README.md``.
"""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS_DIR = ROOT / "results"
NAME = re.compile(r"^[a-z0-9_]+$")
RUN_FIELDS = ("command", "protocol", "seed", "trials", "machine", "date", "versions", "source")
SPREADS = ("std", "se", None)
CELL_KEYS = {"mean", "spread", "digits", "n"}


class ResultsError(ValueError):
    """A results file or a page marker that cannot be rendered; the message is one line with the fix."""


def results_path(name: str, folder: Path = RESULTS_DIR) -> Path:
    return Path(folder) / f"{name}.json"


def load(name: str, folder: Path = RESULTS_DIR) -> dict:
    """The checked content of ``results/<name>.json``."""
    if not NAME.match(name):
        raise ResultsError(f"results name {name!r}: use lowercase letters, digits and _ (the file results/<name>.json)")
    path = results_path(name, folder)
    if not path.is_file():
        close = difflib.get_close_matches(name, sorted(p.stem for p in Path(folder).glob("*.json")), n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise ResultsError(
            f"unknown results file results/{name}.json{hint}: write it (results/README.md) or fix the name"
        )
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ResultsError(f"results/{name}.json is not JSON (line {e.lineno}: {e.msg}): fix the file") from None
    check(data, f"results/{name}.json")
    return data


def check(data: dict, where: str) -> None:
    """Raises ``ResultsError`` at the first thing in ``data`` the renderer cannot print."""
    if not isinstance(data, dict):
        raise ResultsError(f"{where}: the file holds {type(data).__name__}; write an object with title, run, tables")
    for key in ("title", "run", "tables"):
        if key not in data:
            raise ResultsError(f"{where}: no {key!r}: every results file has title, run and tables")
    run = data["run"]
    if not isinstance(run, dict):
        raise ResultsError(f"{where}: run is {type(run).__name__}; write an object with {', '.join(RUN_FIELDS)}")
    for field in RUN_FIELDS:
        if field not in run:
            raise ResultsError(
                f"{where}: run lacks {field!r}: every run states {', '.join(RUN_FIELDS)} (write 'not recorded' "
                "where a fact is unknown)"
            )
    for field in ("command", "protocol", "machine", "date", "source"):
        if not isinstance(run[field], str) or not run[field].strip():
            raise ResultsError(f"{where}: run {field!r} is {run[field]!r}; write a non-empty string")
    _check_trials_and_seed(run, f"{where}: run")
    versions = run["versions"]
    if not (isinstance(versions, str) and versions) and not (
        isinstance(versions, dict) and versions and all(isinstance(v, str) for v in versions.values())
    ):
        raise ResultsError(f"{where}: run 'versions' is {versions!r}; write a file name or {{package: version}}")
    tables = data["tables"]
    if not isinstance(tables, dict) or not tables:
        raise ResultsError(f"{where}: 'tables' must be an object of one or more named tables")
    for table_name, table in tables.items():
        check_table(table, f"{where} table {table_name!r}")


def _check_trials_and_seed(fields: dict, where: str) -> None:
    """A run's ``trials`` and ``seed``, or a table's own (where its cells are over other runs than the file's)."""
    if "trials" in fields and (not _is_int(fields["trials"]) or fields["trials"] < 1):
        raise ResultsError(f"{where} 'trials' is {fields['trials']!r}; write the number of seeds/trials (an int)")
    seed = fields.get("seed", 0)
    if not (_is_int(seed) or (isinstance(seed, list) and seed and all(_is_int(s) for s in seed))):
        raise ResultsError(f"{where} 'seed' is {seed!r}; write an int or a list of ints")


def check_table(table: dict, where: str) -> None:
    if not isinstance(table, dict):
        raise ResultsError(f"{where}: write an object with caption, spread, columns, rows")
    _check_trials_and_seed(table, where)  # optional: the table's cells are over other runs than the file's
    for key in ("columns", "rows"):
        if key not in table:
            raise ResultsError(f"{where}: no {key!r}: a table has caption, spread, columns and rows")
    spread = table.get("spread")
    if spread not in SPREADS:
        raise ResultsError(
            f'{where}: spread {spread!r}: a table uses ONE of "std", "se" or null (put another kind of '
            "spread in a table of its own)"
        )
    if not isinstance(table.get("caption", ""), str):
        raise ResultsError(f"{where}: caption must be a string")
    columns = table["columns"]
    if not isinstance(columns, list) or not columns or not all(isinstance(c, str) for c in columns):
        raise ResultsError(f"{where}: columns must be a list of column names (strings)")
    if not isinstance(table["rows"], list):
        raise ResultsError(f"{where}: rows must be a list of rows (lists of cells)")
    for r, row in enumerate(table["rows"], 1):
        if not isinstance(row, list) or len(row) != len(columns):
            got = len(row) if isinstance(row, list) else type(row).__name__
            raise ResultsError(f"{where} row {r}: {got} cells for {len(columns)} columns: give a row one per column")
        for c, cell in enumerate(row, 1):
            check_cell(cell, spread, f"{where} row {r} column {c}")


def check_cell(cell, spread: str | None, where: str) -> None:
    if isinstance(cell, str) or (isinstance(cell, (int, float)) and not isinstance(cell, bool)):
        return
    if not isinstance(cell, dict):
        raise ResultsError(f'{where}: cell {cell!r}: write a string or {{"mean": x, "digits": d, ...}}')
    unknown = set(cell) - CELL_KEYS
    if unknown:
        raise ResultsError(f"{where}: unknown cell keys {sorted(unknown)}; a cell has mean, spread, digits, n")
    if not _is_number(cell.get("mean")):
        raise ResultsError(f"{where}: cell {cell!r} has no number 'mean'")
    if not _is_int(cell.get("digits")) or not 0 <= cell["digits"] <= 12:
        raise ResultsError(f"{where}: cell {cell!r}: give 'digits' (decimals printed, an int 0-12)")
    if "spread" in cell:
        if spread is None:
            raise ResultsError(
                f"{where}: cell {cell!r} has a spread but the table's spread is null: set the table's "
                'spread to "std" or "se", or drop the cell\'s spread'
            )
        if not _is_number(cell["spread"]) or cell["spread"] < 0:
            raise ResultsError(f"{where}: cell {cell!r}: 'spread' must be a number >= 0")
    if "n" in cell and (not _is_int(cell["n"]) or cell["n"] < 1):
        raise ResultsError(f"{where}: cell {cell!r}: 'n' must be the number of trials of that cell (an int)")


def table_of(data: dict, name: str, table: str | None) -> tuple[str, dict]:
    """(table name, table) a marker names: ``table`` or, when None, the only table or "main"."""
    tables = data["tables"]
    if table is None:
        if len(tables) == 1:
            table = next(iter(tables))
        elif "main" in tables:
            table = "main"
        else:
            raise ResultsError(
                f"results/{name}.json has tables {', '.join(tables)}: name one in the marker "
                f"(<!-- results: {name}/{next(iter(tables))} -->)"
            )
    if table not in tables:
        raise ResultsError(f"results/{name}.json has no table {table!r}; it has: {', '.join(tables)}")
    return table, tables[table]


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and x == x  # not nan
