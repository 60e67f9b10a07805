"""Every documented example runs as written: each fenced ``python`` and ``bash`` block of README.md and
docs/**/*.md (new pages are picked up by the glob) runs in a fresh process from the repository root
(``python -c <block>``, ``bash -e -o pipefail -c <block>``) and must exit 0.

Conventions, on the lines just before a block (docs/reference/errors.md and every page follow them):

- ``<!-- doc-test: skip: <reason> -->``: the block is not run (it needs a GPU, a cluster, a file that is not
  shipped, hours); the reason is shown as the test's skip reason.
- ``<!-- doc-test: sub "<text>" "<replacement>" -->`` (one or more): ``<text>`` is replaced before the run,
  to cut sizes (``--config.num_trials=2``); a sub whose text the block lacks fails, so subs cannot go stale.
- ``<!-- doc-test: slow -->``: the block runs in the ``slow`` tests only (its programs take long to compile).
- ``<!-- doc-test: xla level N -->``: the block compiles at XLA level ``N`` instead of conftest's 0 (a block
  that trains networks for many steps: level 0's code runs them slower than level 1 compiles them).
- Output listings are ```` ```text ```` blocks and never run.

Every run: paths under ``/tmp/`` move into the test's own temporary folder (no run meets another's
workdir), ``../shared/data`` is the benchmark data of ``tests/conftest.py`` (a block that reads a file
absent there skips, naming it), ``$NASJAX_DATA`` is conftest's empty folder and XLA compiles with
conftest's flags (level 0, no fusion emitters; a block's ``xla level`` directive sets its level).

Commands named in prose must at least resolve: every ``python -m <module>`` in README.md, docs/**/*.md and the
docstrings of configs/*.py and scripts/**/*.py names a module that exists; for the repository's entry
points (absl flags) every ``--flag`` it passes is one the module defines (or absl's own), and every
``--config.<field>`` override is a field of the config the command loads.
"""

from __future__ import annotations

import ast
import dataclasses
import glob
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SHARED_DATA

ROOT = Path(__file__).resolve().parents[1]
PAGES = [
    "README.md",
    *sorted(os.path.relpath(p, ROOT) for p in glob.glob(str(ROOT / "docs" / "**" / "*.md"), recursive=True)),
]
FENCE = re.compile(r"^```(\w*)\s*$")
DIRECTIVE = re.compile(r"^<!--\s*doc-test:\s*(.*?)\s*-->\s*$")
SUB = re.compile(r'^sub\s+"((?:[^"\\]|\\.)*)"\s+"((?:[^"\\]|\\.)*)"$')
XLA_LEVEL = re.compile(r"^xla level ([0-3])$")
LEVEL_FLAG = re.compile(r"--xla_backend_optimization_level=\d+")
TIMEOUT_S = 900
# requirements-dev.txt's optional packages: a block that needs one skips where it is not installed
OPTIONAL_PACKAGES = {"optuna", "ray", "syne_tune"}


@dataclasses.dataclass
class Block:
    page: str
    line: int  # of the opening fence, 1-based
    lang: str
    code: str
    skip: str = ""
    slow: bool = False
    xla_level: str = ""  # conftest's level when empty
    subs: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    problem: str = ""  # a directive that cannot be read

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def read_blocks(page: str) -> list[Block]:
    """The fenced blocks of ``page`` with the directives on the lines just above each."""
    lines = (ROOT / page).read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == "```"), len(lines))
        block = Block(page, i + 1, m.group(1), "\n".join(lines[i + 1 : end]) + "\n")
        k = i - 1
        while k >= 0 and (DIRECTIVE.match(lines[k].strip()) or not lines[k].strip()):
            d = DIRECTIVE.match(lines[k].strip())
            k -= 1
            if not d:
                continue
            text = d.group(1)
            sub, level = SUB.match(text), XLA_LEVEL.match(text)
            if text.startswith("skip:") and text[5:].strip():
                block.skip = text[5:].strip()
            elif text == "slow":
                block.slow = True
            elif level:
                block.xla_level = level.group(1)
            elif sub:
                block.subs.insert(0, (_unescape(sub.group(1)), _unescape(sub.group(2))))
            else:
                block.problem = f"cannot read the directive {lines[k + 1].strip()!r}"
        blocks.append(block)
        i = end + 1
    return blocks


BLOCKS = [b for page in PAGES for b in read_blocks(page) if b.lang in ("python", "bash")]


def prepared(block: Block, tmp: Path) -> str:
    """The block's code as it runs: subs applied, /tmp/ paths in ``tmp``, shared data at its place."""
    code = block.code
    for old, new in block.subs:
        assert old in code, f"{block.where}: doc-test sub {old!r} matches nothing in the block (stale?)"
        code = code.replace(old, new)
    for rel in re.findall(r"\.\./shared/data/([\w./-]*\w)", code):
        if not (SHARED_DATA / rel).exists():
            pytest.skip(f"{block.where} reads {SHARED_DATA / rel}, which is absent (public data, see CONTRIBUTING.md)")
    # /tmp/ first: the data's own path may lie under /tmp (a checkout there) and must stay as it is
    return code.replace("/tmp/", f"{tmp}/").replace("../shared/data", str(SHARED_DATA))


def environment(block: Block) -> dict[str, str]:
    """The block's process environment: this interpreter first on PATH, the repository importable, conftest's
    XLA flags with the block's level when it names one."""
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    if block.xla_level:
        flags = LEVEL_FLAG.sub("", env.get("XLA_FLAGS", "")).split()
        env["XLA_FLAGS"] = " ".join([*flags, f"--xla_backend_optimization_level={block.xla_level}"])
    return env


def params():
    for b in BLOCKS:
        marks = [pytest.mark.slow] if b.slow else []
        if b.skip:
            marks.append(pytest.mark.skip(reason=f"{b.where}: {b.skip}"))
        yield pytest.param(b, id=b.where, marks=marks)


@pytest.mark.parametrize("block", list(params()))
def test_documented_block_runs(block: Block, tmp_path):
    assert not block.problem, f"{block.where}: {block.problem}"
    code, env = prepared(block, tmp_path), environment(block)
    cmd = [sys.executable, "-c", code] if block.lang == "python" else ["bash", "-e", "-o", "pipefail", "-c", code]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    out = (done.stdout[-2000:] + "\n" + done.stderr[-4000:]).strip()
    missing = set(re.findall(r"No module named '(\w+)", out)) & OPTIONAL_PACKAGES
    if done.returncode != 0 and missing and not all(importlib.util.find_spec(m) for m in missing):
        pytest.skip(f"{block.where} needs {', '.join(sorted(missing))}, optional and not installed here")
    assert done.returncode == 0, f"{block.where} exited with {done.returncode}:\n{out}"


# -- commands named anywhere: the module exists, its flags and config fields too ----------------------------
ABSL_FLAGS = {"help", "helpfull", "helpshort", "helpxml", "flagfile", "undefok", "verbosity", "v", "logtostderr",
              "alsologtostderr", "log_dir", "stderrthreshold", "showprefixforinfo", "logger_levels", "pdb",
              "pdb_post_mortem", "run_with_pdb", "run_with_profiling", "profile_file", "use_cprofile_for_profiling",
              "only_check_args"}  # fmt: skip
COMMAND = re.compile(r"python3? -m ([A-Za-z_][\w.]*)")
DEFINE = re.compile(r"DEFINE_\w+\(\s*[\"'](\w+)[\"']")
ARGPARSE = re.compile(r"add_argument\(\s*[\"']--([\w-]+)[\"']")  # a module with argparse (scripts.results)


def texts() -> list[tuple[str, str]]:
    """(where, text) of every page and of the docstrings of configs/*.py and scripts/**/*.py."""
    out = [(page, (ROOT / page).read_text(encoding="utf-8")) for page in PAGES]
    for path in sorted(glob.glob(str(ROOT / "configs" / "**" / "*.py"), recursive=True)) + sorted(
        glob.glob(str(ROOT / "scripts" / "**" / "*.py"), recursive=True)
    ):
        doc = ast.get_docstring(ast.parse(Path(path).read_text(encoding="utf-8"))) or ""
        out.append((os.path.relpath(path, ROOT), doc))
    return out


def commands() -> list[tuple[str, str, list[str]]]:
    """(where, module, argument tokens) of every ``python -m`` command in ``texts()``."""
    found = []
    for where, text in texts():
        lines = text.splitlines()
        for n, line in enumerate(lines):
            for m in COMMAND.finditer(line):
                inline = line[: m.start()].count("`") % 2 == 1  # inside `...` on this line
                rest = line[m.end() :].split("`")[0] if inline else line[m.end() :]
                k = n
                while not inline and rest.rstrip().endswith("\\") and k + 1 < len(lines):
                    k += 1
                    rest = rest.rstrip()[:-1] + " " + lines[k]
                rest = re.split(r"&&|\|\||[;|#]|\s\)", rest)[0]
                found.append((f"{where}:{n + 1}", m.group(1), [t.strip("[]'\"`,") for t in rest.split()]))
    return found


def module_flags(module: str, seen: set[str] | None = None) -> set[str]:
    """The flags a repository module (or package: its ``__main__``) defines (absl's, or argparse's), with those
    of the repository modules it imports."""
    seen = set() if seen is None else seen
    path = ROOT / (module.replace(".", "/") + ".py")
    if not path.exists() and (ROOT / module.replace(".", "/") / "__main__.py").exists():
        path = ROOT / module.replace(".", "/") / "__main__.py"
    if module in seen or not path.exists():
        return set()
    seen.add(module)
    source = path.read_text(encoding="utf-8")
    names = set(DEFINE.findall(source)) | set(ARGPARSE.findall(source))
    for dep in re.findall(r"^\s*(?:from|import)\s+((?:scripts|nas|spaces)[\w.]*)", source, re.M):
        names |= module_flags(dep, seen)
    members_of = r"^\s*from\s+((?:scripts|nas|spaces)[\w.]*)\s+import\s+([\w, ]+)$"
    for package, members in re.findall(members_of, source, re.M):
        for member in members.split(","):  # `from scripts.results import verify`: a module of the package
            names |= module_flags(f"{package}.{member.strip()}", seen)
    return names


def config_of(tokens: list[str]):
    """The ConfigDict a command loads with ``--config <file>[:arg]`` (None when it loads none)."""
    spec = next((t.split("=", 1)[1] for t in tokens if t.startswith("--config=")), None)
    if spec is None and "--config" in tokens and tokens.index("--config") + 1 < len(tokens):
        spec = tokens[tokens.index("--config") + 1]
    if spec is None or "<" in spec or "$" in spec:  # a placeholder or a shell variable: loaded when run
        return None
    path, _, arg = spec.partition(":")
    module_spec = importlib.util.spec_from_file_location("doc_config", ROOT / path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module.get_config(arg or None)


def has_field(config, dotted: str) -> bool:
    node = config
    for part in dotted.split("."):
        if not hasattr(node, "keys") or part not in node.keys():
            return False
        node = node[part]
    return True


def test_every_command_named_in_the_docs_resolves():
    problems, configs = [], {}
    for where, module, tokens in commands():
        if importlib.util.find_spec(module.split(".")[0]) is None or importlib.util.find_spec(module) is None:
            problems.append(f"{where}: python -m {module}: no such module")
            continue
        if not module.startswith("scripts."):
            continue
        known = module_flags(module) | ABSL_FLAGS
        for token in tokens:
            if not token.startswith("--") or token.startswith("--config."):
                continue
            name = token[2:].split("=", 1)[0]
            if name not in known and not (name.startswith("no") and name[2:] in known):
                problems.append(f"{where}: python -m {module} has no flag --{name}")
        overrides = [t[len("--config.") :].split("=", 1)[0] for t in tokens if t.startswith("--config.")]
        if overrides:
            key = next((t for t in tokens if t.startswith("--config")), "") + str(tokens)
            if key not in configs:
                try:
                    configs[key] = config_of(tokens)
                except Exception as e:  # noqa: BLE001 - a config that does not load is itself the finding
                    problems.append(f"{where}: the config of {' '.join(tokens)[:80]} does not load: {e}")
                    continue
            config = configs[key]
            problems += [f"{where}: --config.{o}: the config has no field {o!r}" for o in overrides
                         if config is not None and not has_field(config, o)]  # fmt: skip
    assert not problems, "\n".join(problems)


def test_the_directives_are_read():
    """The parser itself: skip, sub (with escaped quotes), slow and xla level lines above a fence, text blocks
    ignored."""
    page = ROOT / "tests" / "_doc_parser_page.md"
    page.write_text(
        'Prose.\n\n<!-- doc-test: skip: needs a GPU -->\n```bash\nnvidia-smi\n```\n\n<!-- doc-test: slow -->\n'
        '<!-- doc-test: xla level 1 -->\n<!-- doc-test: sub "a \\"b\\"" "c" -->\n<!-- doc-test: sub "d" "e" -->\n'
        '```python\nprint(\'a "b" d\')\n```\n'
        "```text\noutput\n```\n<!-- doc-test: frobnicate -->\n```bash\ntrue\n```\n",
        encoding="utf-8",
    )
    try:
        blocks = read_blocks(os.path.relpath(page, ROOT))
    finally:
        page.unlink()
    assert [(b.lang, b.line) for b in blocks] == [("bash", 4), ("python", 12), ("text", 15), ("bash", 19)]
    assert blocks[0].skip == "needs a GPU" and not blocks[0].subs
    assert blocks[1].slow and blocks[1].subs == [('a "b"', "c"), ("d", "e")]
    assert blocks[1].xla_level == "1" and not blocks[0].xla_level
    level = [f for f in environment(blocks[1])["XLA_FLAGS"].split() if "optimization_level" in f]
    assert level == ["--xla_backend_optimization_level=1"], level  # conftest's level 0 replaced, not doubled
    assert environment(blocks[0]).get("XLA_FLAGS") == os.environ.get("XLA_FLAGS")
    assert "frobnicate" in blocks[3].problem
    assert prepared(blocks[1], Path("/x")) == "print('c e')\n"


def test_a_checkout_under_tmp_keeps_its_data_path(monkeypatch):
    """The blocks' /tmp/ paths move to the test's folder, the data's path (here under /tmp) does not."""
    monkeypatch.setattr(sys.modules[__name__], "SHARED_DATA", Path("/tmp/checkout/shared/data"))
    block = Block("docs/x.md", 1, "bash", "ls ../shared/data > /tmp/listing.txt\n")
    assert prepared(block, Path("/work/t")) == "ls /tmp/checkout/shared/data > /work/t/listing.txt\n"
