"""A results table as Markdown: the table, then one caption line that ends with how the figures were made.

    | searcher | NB201 C10 test error (%) |
    |---|---|
    | random search | 8.91 ± 0.41 |

    150 queries. Protocol: mean; ± is the std over 500 trials (seed 0). Command: `python -m ...`.
    Machine: 2-core x86-64 CPU, date 2026-11-20; versions: constraints-results.txt.

A cell ``{"mean": 8.5, "spread": 0.5, "digits": 2, "n": 20}`` prints ``8.50 ± 0.50 (n=20)``: the ``n`` is
printed only where it differs from the run's ``trials``. The output depends on the file alone (the same
file renders to the same bytes).
"""

from __future__ import annotations

import re

SPREAD_WORDS = {"std": "the std", "se": "the standard error"}
PIPE = re.compile(r"(?<!\\)\|")


def cell_text(cell, trials: int) -> str:
    if isinstance(cell, str):
        text = cell
    elif isinstance(cell, (int, float)):
        text = str(cell)
    else:
        d = cell["digits"]
        text = f"{cell['mean']:.{d}f}"
        if "spread" in cell:
            text += f" ± {cell['spread']:.{d}f}"
        if "n" in cell and cell["n"] != trials:
            text += f" (n={cell['n']})"
    return " ".join(text.split()).replace("|", "\\|")  # one line; a | in a cell is not a column break


def seeds_text(seed) -> str:
    if isinstance(seed, int):
        return f"seed {seed}"
    if len(seed) == 1:
        return f"seed {seed[0]}"
    if len(seed) > 3 and list(seed) == list(range(seed[0], seed[0] + len(seed))):
        return f"seeds {seed[0]}-{seed[-1]}"
    return "seeds " + ", ".join(str(s) for s in seed)


def versions_text(versions) -> str:
    if isinstance(versions, str):
        return versions
    return ", ".join(f"{package} {version}" for package, version in versions.items())


def run_text(run: dict, spread: str | None) -> str:
    """What the renderer adds to every caption, from the file's ``run``."""
    trials = f"{run['trials']} trial{'s' if run['trials'] != 1 else ''}"
    over = f"± is {SPREAD_WORDS[spread]} over {trials}" if spread else trials
    return (
        f"Protocol: {run['protocol']}; {over} ({seeds_text(run['seed'])}). Command: `{run['command']}`. "
        f"Machine: {run['machine']}, date {run['date']}; versions: {versions_text(run['versions'])}."
    )


def table_run(table: dict, run: dict) -> dict:
    """The run a table's cells are over: the file's, with the table's own ``trials`` and ``seed`` if it has them."""
    return {**run, **{k: table[k] for k in ("trials", "seed") if k in table}}


def caption_text(table: dict, run: dict) -> str:
    caption = " ".join(table.get("caption", "").split())
    tail = run_text(table_run(table, run), table.get("spread"))
    return f"{caption} {tail}" if caption else tail


def table_rows(table: dict, trials: int) -> list[list[str]]:
    """The header, then one list of cell texts per row."""
    header = [cell_text(c, trials) for c in table["columns"]]
    return [header] + [[cell_text(c, trials) for c in row] for row in table["rows"]]


def row_line(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def render(table: dict, run: dict) -> list[str]:
    """The lines between a page's markers: a blank line, the table, a blank line, the caption, a blank line."""
    rows = table_rows(table, table_run(table, run)["trials"])
    lines = [row_line(rows[0]), "|" + "---|" * len(rows[0])]
    lines += [row_line(r) for r in rows[1:]]
    return ["", *lines, "", caption_text(table, run), ""]


def parse_row(line: str) -> list[str]:
    """The cell texts of a Markdown table line (escaped pipes stay in their cell)."""
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return [c.strip() for c in PIPE.split(body)]


def is_separator(line: str) -> bool:
    return bool(re.fullmatch(r"\|?(\s*:?-+:?\s*\|)*\s*:?-+:?\s*\|?", line.strip()))
