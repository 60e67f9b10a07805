"""The commands of the reported tables read every setting from their configs, and the docs state those settings.

1. Every ``python -m scripts.train --config configs/...`` command in README.md and docs/**/*.md builds: its
   config loads with the command's ``--config.*`` overrides, validates, and each selected searcher's entry
   lists every option of its searcher (no option is left to a default the config does not show).
2. Every ``Settings (`configs/<file>.py[:arg]`): `label` option=value, ...; ...`` line in the docs (written
   under a reported table) matches the config it names, option by option.
"""

import dataclasses
import importlib
import pathlib
import re

import pytest

from nas.experiment.config import searcher_entries, searcher_options_of, selected_labels, validate_config
from nas.experiment.multiobjective import ENTRY_FIELDS

ROOT = pathlib.Path(__file__).parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]


def _page(doc: pathlib.Path) -> str:
    """The page's path from the repository root (docs/reference/x.md and docs/research/x.md differ)."""
    return doc.relative_to(ROOT).as_posix()
FILE_FIELDS = ("test_data", "data_path", "fidelity_data")  # files: not needed to check settings

COMMAND = re.compile(r"python -m scripts\.train --config (configs/\S+?\.py(?::\S+)?)((?:\s+(?:\\\n\s*)?--\S+)*)")
SETTINGS = re.compile(r"^Settings \(`(configs/[^`]+)`\): (.+)$", re.M)


def load(spec: str):
    path, _, arg = spec.partition(":")
    module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
    return module.get_config(arg or None)


def override(config, dotted: str, text: str) -> None:
    """``--config.<dotted>=<text>`` as ml_collections' config flags apply it (typed like the field)."""
    *parents, leaf = dotted.split(".")
    node = config
    for p in parents:
        node = node[p]
    old = node[leaf]
    if isinstance(old, bool):
        value = text.lower() in ("true", "1")
    elif isinstance(old, (int, float)) and not isinstance(old, bool):
        value = type(old)(float(text)) if isinstance(old, int) and "." not in text else type(old)(text)
    else:
        value = text
    node[leaf] = value


def commands() -> list[tuple[str, str, list[tuple[str, str]]]]:
    """(doc, config spec, [(field, value)]) of every scripts.train command with a literal config spec."""
    out = []
    for doc in DOCS:
        for m in COMMAND.finditer(doc.read_text()):
            spec = m.group(1)
            if any(c in spec for c in "$<[|"):
                continue  # a shell variable or a placeholder: no literal config
            flags = re.findall(r"--config\.([\w.]+)=([^\s`,;)]+)", m.group(2))
            out.append((_page(doc), spec, flags))
    return out


COMMANDS = commands()


def test_the_docs_have_commands():
    assert len(COMMANDS) > 30


@pytest.mark.parametrize("doc, spec, flags", COMMANDS, ids=[f"{d}:{s}" for d, s, _ in COMMANDS])
def test_documented_command_reads_every_setting_from_its_config(doc, spec, flags):
    config = load(spec)
    if "searchers" not in config:
        return  # not a search experiment
    for field, value in flags:
        if field.split(".")[0] not in FILE_FIELDS:
            override(config, field, value)
    for field in FILE_FIELDS:
        if field in config:
            config[field] = ""
    validate_config(config)
    entries = searcher_entries(config)
    for label in selected_labels(config):
        options = searcher_options_of(config, label)
        fields = {f.name for f in dataclasses.fields(options) if f.name != "max_queries"}
        listed = set(entries[label]) - {"name", *ENTRY_FIELDS}  # constraints: entry keys, not searcher options
        assert listed == fields, f"{doc}: {spec} searcher {label}: options not in the config {fields - listed}"


def stated_settings() -> list[tuple[str, str, str, str, str]]:
    """(doc, config spec, label, option, stated value) of every Settings line."""
    out = []
    for doc in DOCS:
        for m in SETTINGS.finditer(doc.read_text()):
            for part in m.group(2).split(";"):
                got = re.match(r"\s*`([\w.-]+)` (.*)", part)
                assert got, f"{_page(doc)}: cannot read settings {part!r} (write `label` option=value, ...)"
                for pair in got.group(2).split(","):
                    option, _, value = pair.strip().partition("=")
                    out.append((_page(doc), m.group(1), got.group(1), option.strip(), value.strip().rstrip(".")))
    return out


STATED = stated_settings()


def test_the_docs_state_settings():
    assert {spec.partition(":")[0] for _, spec, *_ in STATED} >= {"configs/table3.py", "configs/table5.py"}


@pytest.mark.parametrize("doc, spec, label, option, value", STATED, ids=[f"{s}:{lb}.{o}" for _, s, lb, o, _ in STATED])
def test_stated_settings_are_the_configs(doc, spec, label, option, value):
    entries = searcher_entries(load(spec))
    assert label in entries, f"{doc}: {spec} has no searcher {label!r} (its searchers: {list(entries)})"
    actual = entries[label][option]
    if isinstance(actual, bool) or not isinstance(actual, (int, float)):
        assert str(actual) == value, f"{doc}: {spec} {label}.{option} is {actual!r}, the doc says {value}"
    else:
        assert float(actual) == pytest.approx(float(value)), f"{doc}: {spec} {label}.{option} is {actual}, doc: {value}"


def test_the_version_lock_pins_every_requirement():
    """constraints-results.txt (the versions the reported tables were produced with) pins each package of
    requirements.txt, so ``pip install -r requirements.txt -c constraints-results.txt`` reproduces them."""
    norm = lambda name: re.sub(r"[-_.]+", "-", name).lower()  # noqa: E731 - PEP 503 names
    pinned = {
        norm(line.split("==")[0])
        for line in (ROOT / "constraints-results.txt").read_text().splitlines()
        if "==" in line
    }
    wanted = {
        norm(re.split(r"[<>=\[ ]", line)[0])
        for line in (ROOT / "requirements.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert wanted <= pinned, f"not pinned: {sorted(wanted - pinned)}"
