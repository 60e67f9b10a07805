"""``python -m scripts.results``: render or check the results tables of pages; import a run's figures.

    python -m scripts.results [--check] [PAGE ...]     # no PAGE: README.md and every docs/**/*.md
    python -m scripts.results import WORKDIR --name NAME [--title T] [--command C] [--digits D] [--queries Q,...]
    python -m scripts.results import-bench BENCH.json --name NAME [--title T] [--command C]
    python -m scripts.results verify NAME --workdir COLUMN=WORKDIR ... [--row LABEL=SEARCHER] [--write ...]

``--check`` prints ``PAGE:LINE: results NAME/TABLE row R column C: page has '...', results/NAME.json
gives '...'`` for every differing cell and exits 1; a results file or marker that cannot be read stops
with one line ``results error: ...`` and exit 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from scripts.results import importing, pages, source, verify
from scripts.results.source import ResultsError


def default_pages(root: Path) -> list[str]:
    docs = sorted(p.relative_to(root).as_posix() for p in (root / "docs").glob("**/*.md"))
    return (["README.md"] if (root / "README.md").is_file() else []) + docs


def page_name(page: str, root: Path) -> str:
    """``page`` (from the current folder) as a path from the repository root where it lies inside it."""
    path = Path(page).resolve()
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def run_pages(args) -> int:
    """Renders (or checks) every page named; a page that cannot be read is reported and the rest go on."""
    root, folder = source.ROOT, Path(args.results_dir).resolve()
    names = [page_name(p, root) for p in args.pages] if args.pages else default_pages(root)
    found, errors = [], []
    for page in names:
        try:
            if args.check:
                found += pages.differences(page, root, folder)
            elif pages.rewrite(page, root, folder):
                print(f"rendered {page}")
        except ResultsError as e:
            errors.append(str(e))
    for line in found:
        print(line)
    for line in errors:
        print(f"results error: {line}", file=sys.stderr)
    if found:
        print(f"{len(found)} difference(s): run python -m scripts.results PAGE to render the page, or fix the "
              "results file", file=sys.stderr)  # fmt: skip
    return 2 if errors else 1 if found else 0


def run_import(args, bench: bool) -> int:
    if bench:
        data = importing.from_tuner_bench(args.source, args.title, args.command, args.machine_note)
    else:
        data = importing.from_workdir(args.source, args.title, args.command, args.digits, args.machine_note,
                                      tuple(int(q) for q in args.queries.split(",") if q))
    path = importing.write(data, args.name, Path(args.results_dir))
    print(f"wrote {os.path.relpath(path)}")
    return 0


def parser(kind: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m scripts.results" + ("" if kind == "pages" else f" {kind}"))
    p.add_argument("--results-dir", default=str(source.RESULTS_DIR), help="where the results files are")
    if kind == "pages":
        p.add_argument("--check", action="store_true", help="exit 1 where a page differs from its results")
        p.add_argument("pages", nargs="*", help="Markdown pages (default: README.md and docs/**/*.md)")
        return p
    p.add_argument("source", help="the run's workdir" if kind == "import" else "bench_tuner's --json file")
    p.add_argument("--name", required=True, help="the results file to write: results/NAME.json")
    p.add_argument("--title", default="", help="the file's title")
    p.add_argument("--command", default="", help="the command that ran it (where the run does not record it)")
    p.add_argument("--machine-note", default="", help="added to the machine, e.g. 'shared with other jobs'")
    if kind == "import":
        p.add_argument("--digits", type=int, default=3, help="decimals printed")
        p.add_argument("--queries", default="", help="columns at these query counts (50,100,150; default: the budget)")
    return p


def main(argv: list[str]) -> int:
    if argv and argv[0] == "verify":
        try:
            return verify.main(argv[1:])
        except ResultsError as e:
            print(f"results error: {e}", file=sys.stderr)
            return 2
    kind = argv[0] if argv and argv[0] in ("import", "import-bench") else "pages"
    args = parser(kind).parse_args(argv[1:] if kind != "pages" else argv)
    try:
        return run_pages(args) if kind == "pages" else run_import(args, bench=kind == "import-bench")
    except ResultsError as e:
        print(f"results error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
