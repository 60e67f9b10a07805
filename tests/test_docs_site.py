"""The documentation site: it builds with ``mkdocs build --strict`` (no broken link or anchor, every API entry
renders), its pages fit their budget, and the reference pages list every public name and every searcher."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
BUDGETS = {"README.md": 12_000, "docs/**/*.md": 260_000, "docs/dev/": 15_000}  # bytes


def pages(folder: Path = DOCS) -> list[Path]:
    return sorted(folder.glob("**/*.md"))


@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None, reason="mkdocs is not installed: pip install -r "
                    "requirements-dev.txt")  # fmt: skip
def test_the_site_builds_strict(tmp_path):
    cmd = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")]
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    warnings = [line for line in (r.stdout + r.stderr).splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert r.returncode == 0, "mkdocs build --strict failed:\n" + "\n".join(warnings or [r.stderr[-3000:]])


def test_docs_fit_their_budget():
    def over(paths: list[Path], limit: int, what: str) -> str:
        total = sum(p.stat().st_size for p in paths)
        if total <= limit:
            return ""
        largest = sorted(paths, key=lambda p: -p.stat().st_size)[:5]
        named = ", ".join(f"{p.relative_to(ROOT)} ({p.stat().st_size:,})" for p in largest)
        return f"{what}: {total:,} bytes > {limit:,} (largest: {named})"

    found = [
        over([ROOT / "README.md"], BUDGETS["README.md"], "README.md"),
        over(pages(), BUDGETS["docs/**/*.md"], "docs/**/*.md"),
        over(pages(DOCS / "dev"), BUDGETS["docs/dev/"], "docs/dev/"),
    ]
    assert not any(found), "\n".join(filter(None, found))


def nav_pages() -> list[str]:
    yaml = pytest.importorskip("yaml", reason="PyYAML comes with mkdocs: pip install -r requirements-dev.txt")

    class Loader(yaml.SafeLoader):  # mkdocs.yml may hold !!python/name tags; the nav needs none of them
        pass

    Loader.add_multi_constructor("", lambda loader, suffix, node: None)
    nav = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=Loader)["nav"]
    out = []

    def walk(entry):
        if isinstance(entry, str):
            out.append(entry)
        elif isinstance(entry, dict):
            for value in entry.values():
                walk(value)
        elif isinstance(entry, list):
            for value in entry:
                walk(value)

    walk(nav)
    return out


def test_every_page_is_in_the_nav():
    nav = nav_pages()
    missing = [p.relative_to(DOCS).as_posix() for p in pages() if p.relative_to(DOCS).as_posix() not in nav]
    assert not missing, f"pages the site's nav (mkdocs.yml) does not list: {missing}"
    assert len(nav) == len(set(nav)), "a page is listed twice in mkdocs.yml's nav"


def test_the_api_reference_names_every_public_name():
    import nas

    text = (DOCS / "reference" / "api.md").read_text()
    entries = set(re.findall(r"^::: ([\w.]+)$", text, re.M))
    missing = []
    for name in nas.__all__:
        obj = getattr(nas, name)
        if f"{obj.__module__}.{name}" not in entries:
            missing.append(f"::: {obj.__module__}.{name}")
    assert not missing, f"docs/reference/api.md lacks entries for nas.__all__: {missing}"
    public = {f"{getattr(nas, n).__module__}.{n}" for n in nas.__all__}
    assert entries <= public, f"docs/reference/api.md documents names outside nas.__all__: {entries - public}"


def searcher_rows() -> dict[str, list[str]]:
    """``{name: cells}`` of the table of docs/reference/searchers.md (the name is its second column)."""
    rows = {}
    for line in (DOCS / "reference" / "searchers.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 6 and re.fullmatch(r"`\w+`", cells[1]) and cells[0] != "searcher":  # not the header
            name = cells[1].strip("`")
            assert name not in rows, f"docs/reference/searchers.md lists {name} twice"
            rows[name] = cells
    return rows


def test_the_searchers_page_lists_every_registered_searcher():
    import nas
    from nas.searchers import searcher_class

    rows = searcher_rows()
    registered = set(nas.available_searchers(None))
    assert set(rows) == registered, (
        f"docs/reference/searchers.md: missing {sorted(registered - set(rows))}, not registered "
        f"{sorted(set(rows) - registered)}"
    )
    for name, cells in rows.items():
        multi_fidelity = bool(getattr(searcher_class(name), "multi_fidelity", False))
        multi_objective = "num_objectives" in nas.searcher_options(name)
        assert (cells[4] == "yes") == multi_fidelity, f"{name}: multi-fidelity column says {cells[4]!r}"
        assert (cells[5] == "yes") == multi_objective, f"{name}: multi-objective column says {cells[5]!r}"
