"""No import cycle between the library's files.

The walker reads every import of every module of the library's packages without running any: module-level
imports and the lazy ones inside functions, relative imports resolved against the importing package,
``from pkg import submodule`` counted as an import of the submodule (``from pkg import name`` as one of
``pkg/__init__.py``), ``importlib.import_module("literal")`` and the ``"module:attribute"`` strings of lazy
export tables (``nas.__init__``). Two files that import each other, directly or around a longer loop, are
one cycle: the test prints each cycle's files and one loop through them.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("nas", "spaces", "policies", "surrogates", "scripts", "configs")

EXPORT_STRING = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")  # "package.module:attribute"


def module_files(root: Path, packages) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file under the packages (a package is its ``__init__``)."""
    out = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def imported_names(tree: ast.AST, module: str, is_package: bool, known) -> set[str]:
    """Every dotted name the module imports (not yet resolved to a file), lazy imports included."""
    package = module if is_package else module.rpartition(".")[0]
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: ``from .. import x`` climbs level - 1 packages above this one
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module
            for alias in node.names:  # ``from pkg import submodule`` imports the submodule's file
                sub = f"{source}.{alias.name}"
                names.add(sub if sub in known else source)
        elif isinstance(node, ast.Call) and _is_import_module(node.func):
            if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                names.add(node.args[0].value)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and EXPORT_STRING.fullmatch(node.value):
            names.add(node.value.partition(":")[0])
    return names


def _is_import_module(func: ast.AST) -> bool:
    return (isinstance(func, ast.Attribute) and func.attr == "import_module") or (
        isinstance(func, ast.Name) and func.id in ("import_module", "__import__")
    )


def import_graph(root: Path, packages=PACKAGES) -> nx.DiGraph:
    """Module -> module edges between the library's files (names outside the packages are left out)."""
    files = module_files(root, packages)
    graph = nx.DiGraph()
    graph.add_nodes_from(files)
    for module, path in files.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        for name in imported_names(tree, module, path.name == "__init__.py", files):
            while name and name not in files:  # ``pkg.mod.attr`` -> the deepest file it names
                name = name.rpartition(".")[0]
            if name and name != module:
                graph.add_edge(module, name)
    return graph


def cycles(graph: nx.DiGraph) -> list[frozenset[str]]:
    """The sets of modules that import each other (strongly connected components of two or more)."""
    return sorted((frozenset(c) for c in nx.strongly_connected_components(graph) if len(c) > 1), key=sorted)


def describe(graph: nx.DiGraph, component: frozenset[str], root: Path = ROOT) -> str:
    loop = [a for a, _ in nx.find_cycle(graph.subgraph(component))]
    files = ", ".join(sorted(str(_file(m, root)) for m in component))
    return f"{len(component)} files ({files}); one loop: {' -> '.join([*loop, loop[0]])}"


def _file(module: str, root: Path) -> Path:
    path = Path(*module.split("."))
    return path / "__init__.py" if (root / path).is_dir() else path.with_suffix(".py")


def test_no_import_cycle_between_the_library_files():
    graph = import_graph(ROOT)
    found = [describe(graph, c) for c in cycles(graph)]
    assert not found, "import cycles between files (cut each one):\n" + "\n".join(found)


def test_the_walker_reads_the_library():
    """The graph holds the library's files and the kinds of edges the walker claims to read."""
    graph = import_graph(ROOT)
    assert {"nas", "spaces.base", "policies.base", "surrogates", "scripts.train", "configs.default"} <= set(graph)
    assert graph.has_edge("policies.maade", "policies.base")  # an absolute module-level import
    assert graph.has_edge("nas", "spaces.params")  # the front door's lazy "module:attribute" table


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def test_the_walker_finds_a_cycle_through_lazy_relative_and_submodule_imports(tmp_path):
    _write(tmp_path, {
        "fake/__init__.py": "",
        "fake/a.py": "def f():\n    from .sub import b  # lazy, relative\n",
        "fake/sub/__init__.py": "",
        "fake/sub/b.py": "from fake.sub import c\n",  # a submodule by ``from pkg import name``
        "fake/sub/c.py": "import importlib\nimportlib.import_module('fake.a')\n",
        "fake/d.py": "from fake.a import f\nimport fake.sub.b\n",  # imports into the cycle, not part of it
    })  # fmt: skip
    graph = import_graph(tmp_path, ("fake",))
    assert cycles(graph) == [frozenset({"fake.a", "fake.sub.b", "fake.sub.c"})]
    assert "fake/sub/b.py" in describe(graph, cycles(graph)[0], tmp_path)


def test_the_walker_counts_a_package_init_and_finds_no_cycle_where_there_is_none(tmp_path):
    _write(tmp_path, {
        "fake/__init__.py": "from fake.impl import thing\n",
        "fake/impl.py": "from fake.registry import register\n",
        "fake/registry.py": "REGISTRY = {}\n",
    })  # fmt: skip
    assert cycles(import_graph(tmp_path, ("fake",))) == []
    _write(tmp_path, {"fake/registry.py": "def all_of_them():\n    from fake import thing\n"})  # the base imports back
    assert cycles(import_graph(tmp_path, ("fake",))) == [frozenset({"fake", "fake.impl", "fake.registry"})]
