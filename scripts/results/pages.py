"""The results tables of a page: find the marked blocks, render them in place, or say where they differ.

A block is the lines between ``<!-- results: NAME -->`` (or ``<!-- results: NAME/TABLE -->``) and
``<!-- /results -->``, each on a line of its own; markers inside fenced code blocks are text, not blocks.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from scripts.results import render, source
from scripts.results.source import ResultsError
from spaces.files import write_text_atomic

OPEN = re.compile(r"^\s*<!--\s*results:(.*?)-->\s*$")
CLOSE = re.compile(r"^\s*<!--\s*/results\s*-->\s*$")
TARGET = re.compile(r"^([a-z0-9_]+)(?:/([A-Za-z0-9_.-]+))?$")
FENCE = re.compile(r"^\s*(```|~~~)")


@dataclasses.dataclass
class Block:
    page: str
    start: int  # index of the opening marker's line
    end: int  # index of the closing marker's line
    name: str
    table: str | None

    def label(self, table: str) -> str:
        return f"{self.page}:{self.start + 1}: results {self.name}/{table}"


def unclosed(page: str, start: int) -> str:
    return f"{page}:{start + 1}: results marker not closed: add <!-- /results --> below its table"


def find_blocks(page: str, lines: list[str]) -> list[Block]:
    blocks, fenced, current = [], False, None
    for i, line in enumerate(lines):
        if FENCE.match(line):
            fenced = not fenced
        if fenced:
            continue
        m = OPEN.match(line)
        if m:
            if current is not None:
                raise ResultsError(unclosed(page, current[0]))
            target = TARGET.match(m.group(1).strip())
            if not target:
                raise ResultsError(
                    f"{page}:{i + 1}: cannot read the marker {line.strip()!r}: write <!-- results: NAME --> or "
                    "<!-- results: NAME/TABLE --> (NAME: lowercase letters, digits, _)"
                )
            current = (i, target.group(1), target.group(2))
        elif CLOSE.match(line):
            if current is None:
                raise ResultsError(f"{page}:{i + 1}: <!-- /results --> without a <!-- results: NAME --> before it")
            blocks.append(Block(page, current[0], i, current[1], current[2]))
            current = None
    if current is not None:
        raise ResultsError(unclosed(page, current[0]))
    return blocks


def rendered(block: Block, folder: Path) -> tuple[str, list[str]]:
    try:
        data = source.load(block.name, folder)
        table_name, table = source.table_of(data, block.name, block.table)
    except ResultsError as e:
        raise ResultsError(f"{block.page}:{block.start + 1}: {e}") from None
    return table_name, render.render(table, data["run"])


def read_page(page: str, root: Path) -> list[str]:
    path = Path(root) / page
    if not path.is_file():
        raise ResultsError(f"no page {page}: name a Markdown file (paths from the repository root)")
    return path.read_text(encoding="utf-8").split("\n")


def rewrite(page: str, root: Path = source.ROOT, folder: Path = source.RESULTS_DIR) -> bool:
    """Renders every block of ``page`` in place; True when the file changed."""
    lines = read_page(page, root)
    out, last = [], 0
    for block in find_blocks(page, lines):
        out += lines[last : block.start + 1] + rendered(block, folder)[1]
        last = block.end
    out += lines[last:]
    if out == lines:
        return False
    write_text_atomic(Path(root) / page, "\n".join(out))
    return True


def differences(page: str, root: Path = source.ROOT, folder: Path = source.RESULTS_DIR) -> list[str]:
    """One line per cell (row, caption) where ``page`` disagrees with its results files."""
    lines = read_page(page, root)
    found = []
    for block in find_blocks(page, lines):
        table_name, want = rendered(block, folder)
        have = lines[block.start + 1 : block.end]
        if have != want:
            found += _compare(block, table_name, have, want)
    return found


def _split(lines: list[str], first: int) -> tuple[list[tuple[int, list[str]]], tuple[int, str]]:
    """(line index, cells) of the table's rows (header first, separator left out) and (line, caption)."""
    rows, caption, where = [], [], first
    for i, line in enumerate(lines, first):
        if line.strip().startswith("|"):
            if not render.is_separator(line):
                rows.append((i, render.parse_row(line)))
        elif line.strip():
            if not caption:
                where = i
            caption.append(line.strip())
    return rows, (where, " ".join(caption))


def _compare(block: Block, table_name: str, have: list[str], want: list[str]) -> list[str]:
    has_rows, (cap_line, has_caption) = _split(have, block.start + 1)
    want_rows, (_, want_caption) = _split(want, 0)
    name = f"results {block.name}/{table_name}"
    source_file = f"results/{block.name}.json"
    out = []
    for r in range(max(len(has_rows), len(want_rows))):
        what = "header" if r == 0 else f"row {r}"
        if r >= len(has_rows):
            line = (has_rows[-1][0] if has_rows else block.start) + 1
            out.append(f"{block.page}:{line}: {name} {what}: page lacks it, {source_file} gives "
                       f"{render.row_line(want_rows[r][1])!r}")  # fmt: skip
            continue
        line, cells = has_rows[r]
        if r >= len(want_rows):
            out.append(f"{block.page}:{line + 1}: {name} {what}: page has {render.row_line(cells)!r}, "
                       f"{source_file} has no such row")  # fmt: skip
            continue
        wanted = want_rows[r][1]
        for c in range(max(len(cells), len(wanted))):
            got = cells[c] if c < len(cells) else "(no cell)"
            give = wanted[c] if c < len(wanted) else "(no cell)"
            if got != give:
                out.append(f"{block.page}:{line + 1}: {name} {what} column {c + 1}: page has {got!r}, "
                           f"{source_file} gives {give!r}")  # fmt: skip
    if has_caption != want_caption:
        out.append(f"{block.page}:{cap_line + 1}: {name} caption: page has {has_caption!r}, "
                   f"{source_file} gives {want_caption!r}")  # fmt: skip
    if not out:  # same cells, other spacing: the page is not what the renderer writes
        out.append(f"{block.page}:{block.start + 1}: {name}: the block is laid out by hand (same figures); "
                   f"run python -m scripts.results {block.page}")  # fmt: skip
    return out
