"""A study file holds data only (nas/host/study_record.py, spaces/declaration.py): its first record is the
settings as JSON (the space as its declaration), loading a file runs no code from it, a pickle anywhere in
it (a 0.2 journal, or a crafted one) is refused with one line naming the file, and a 0.2 journal you trust
converts with ``python -m scripts.migrate_journal OLD NEW --trust``."""

import base64
import json
import os
import pickle
import subprocess
import sys

import pytest

import nas
from nas.host.storage import StorageError
from scripts.migrate_journal import migrate
from spaces.base import CategoricalSpace
from spaces.declaration import declaration, from_declaration
from spaces.hpo import mlp_space
from spaces.params import Categorical, Float, Int

SPACE = {
    "lr": Float(1e-3, 1e-1, log=True),
    "units": Int(8, 64, log=True, num=4),
    "opt": ["sgd", "adam"],
    "hidden": Categorical([(64, 64), (128,)], when={"opt": ["adam"]}),
    "momentum": Float(0.0, 0.9, step=0.1, when={"opt": ["sgd"]}),
}
SMALL = {"a": list(range(6))}
OPTIONS = dict(searcher="random_search", direction="minimize", seed=2, max_trials=6)


def objective(trial) -> float:
    params = trial.params
    return params["lr"] * params["units"] + (len(params["hidden"]) if "hidden" in params else params["momentum"])


def summary(study):
    return [(t.number, t.tokens.tolist(), t.state, t.value, t.params) for t in study.trials]


def first_record(path) -> dict:
    with open(path) as f:
        return json.loads(f.readline())


def write_first_record(path, record: dict) -> None:
    with open(path) as f:
        lines = f.readlines()
    lines[0] = json.dumps(record) + "\n"
    with open(path, "w") as f:
        f.writelines(lines)


def payload(marker) -> str:
    """A base64 pickle whose unpickling creates the file ``marker`` (what a crafted study file could hold)."""

    class WritesAFile:
        def __reduce__(self):
            return open, (str(marker), "w")

    return base64.b64encode(pickle.dumps(WritesAFile())).decode("ascii")


def test_the_payload_is_real(tmp_path):
    pickle.loads(base64.b64decode(payload(tmp_path / "proof")))  # what unpickling the file would have done
    assert (tmp_path / "proof").exists()


def test_a_study_file_keeps_its_settings_as_json_and_loads_them_back(tmp_path):
    path = str(tmp_path / "study.jsonl")
    study = nas.create_study(SPACE, storage=path, **OPTIONS)
    study.optimize(objective, n_trials=4)
    study.close()
    record = first_record(path)
    assert record["version"] == 2 and "readable" not in record
    settings = record["settings"]
    assert settings["space"]["lr"] == {"type": "float", "low": 0.001, "high": 0.1, "log": True, "step": None,
                                       "num": None, "when": None}  # fmt: skip
    assert settings["space"]["opt"] == ["sgd", "adam"]
    assert settings["space"]["hidden"] == {"type": "categorical", "choices": [{"__tuple__": [64, 64]},
                                           {"__tuple__": [128]}], "when": {"opt": ["adam"]}}  # fmt: skip
    assert (settings["searcher"], settings["seed"], settings["max_queries"]) == ("random_search", 2, 6)
    loaded = nas.load_study(path)
    assert summary(loaded) == summary(study)  # the same params: a tuple choice comes back a tuple
    assert all(isinstance(t.params["hidden"], tuple) for t in loaded.trials if "hidden" in t.params)
    loaded.optimize(objective)
    study.optimize(objective)
    assert summary(loaded) == summary(study) and len(study.trials) == 6
    loaded.close()


@pytest.mark.parametrize("space", [CategoricalSpace("toy", {"a": [1, 2.5, "x", None], "b": [(1, 2), True]}),
                                   mlp_space(False), SPACE, {"a": [1, 2], "b": ("u", "v")}], ids=str)  # fmt: skip
def test_a_space_declaration_rebuilds_the_space(space):
    data = json.loads(json.dumps(declaration(space)))
    back = from_declaration(data)
    if isinstance(space, dict):
        assert back == {k: v if not isinstance(v, tuple) else list(v) for k, v in space.items()}
    else:
        assert type(back) is type(space) and back.name == space.name
        assert getattr(back, "values", None) == getattr(space, "values", None)
        assert getattr(back, "hyperparameters", None) == getattr(space, "hyperparameters", None)


def test_settings_with_code_are_refused_when_the_study_is_created(tmp_path):
    path = str(tmp_path / "study.jsonl")
    canonical = CategoricalSpace("toy", {"a": list(range(6))}, canonical=lambda spec: spec)
    with pytest.raises(StorageError, match="a CategoricalSpace has no declaration as data.*or create the study") as e:
        nas.create_study(canonical, storage=path, **OPTIONS)
    assert "\n" not in str(e.value)
    with pytest.raises(StorageError, match="hyperparameter 'a': object .* is not plain data"):
        nas.create_study({"a": [object(), 1, 2, 3, 4, 5]}, storage=path, **OPTIONS)
    nas.create_study(SMALL, storage=path, **OPTIONS).close()  # the failed ones released the file
    with pytest.raises(ValueError, match="names must be strings to be kept as data, got 1"):
        declaration({1: [0, 1]})  # JSON keys are strings: 1 would come back "1"


def test_a_0_2_journal_is_refused_and_converts_with_trust(tmp_path):
    old, new = str(tmp_path / "study.jsonl"), str(tmp_path / "study_v2.jsonl")
    study = nas.create_study(SPACE, storage=old, **OPTIONS)
    study.optimize(objective, n_trials=3)
    study.close()
    from nas.host.study_record import read_settings

    record = first_record(old)
    settings = read_settings(record, old)  # what 0.2 pickled into the record
    write_first_record(old, {"event": "study", "kind": record["kind"], "version": 1, "readable": {},
                             "settings": base64.b64encode(pickle.dumps(settings)).decode("ascii")})  # fmt: skip
    with pytest.raises(StorageError) as e:
        nas.load_study(old)
    line = str(e.value)
    assert line.startswith(f"{old} was written by nasjax 0.2") and "\n" not in line
    assert f"python -m scripts.migrate_journal {old} {new} --trust" in line
    with pytest.raises(StorageError, match="pass --trust if the file is yours"):
        migrate(old, new)
    assert not os.path.exists(new)
    assert migrate(old, new, trust=True) == 1 + 3 * 2  # the settings, then each trial's ask and tell
    assert first_record(new)["settings"] == record["settings"]
    loaded = nas.load_study(new)
    assert summary(loaded) == summary(study)
    loaded.close()
    with pytest.raises(StorageError, match="already holds its settings as data"):
        migrate(new, str(tmp_path / "again.jsonl"), trust=True)


def test_the_migration_command(tmp_path):
    old, new = str(tmp_path / "study.jsonl"), f"sqlite:///{tmp_path}/study.db"
    study = nas.create_study(SMALL, storage=old, **OPTIONS)
    study.optimize(lambda t: t.params["a"], n_trials=2)
    study.close()
    record = first_record(old)
    settings = dict(record["settings"], space=SMALL)
    write_first_record(old, {"event": "study", "kind": record["kind"], "version": 1,
                             "settings": base64.b64encode(pickle.dumps(settings)).decode("ascii")})  # fmt: skip
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    run = subprocess.run([sys.executable, "-m", "scripts.migrate_journal", old, new, "--trust"], cwd=root,
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert summary(nas.load_study(new)) == summary(study)


@pytest.mark.parametrize("where", ["the whole settings, as 0.2 wrote them", "settings", "searcher", "space",
                                   "an option", "the space's values"])  # fmt: skip
@pytest.mark.parametrize("storage", ["journal", "sqlite"])
def test_a_pickle_in_a_study_file_runs_nothing_and_is_refused(tmp_path, where, storage):
    marker = tmp_path / "written_by_the_pickle"
    spec = str(tmp_path / "study.jsonl") if storage == "journal" else f"sqlite:///{tmp_path}/study.db"
    nas.create_study(SMALL, storage=spec, **OPTIONS).close()
    from nas.host.storage import open_storage

    store = open_storage(spec)
    record = store.records()[0]
    evil = payload(marker)
    if where.startswith("the whole"):
        record.update(version=1, settings=evil)
    elif where == "settings":
        record["settings"] = evil
    elif where == "an option":
        record["settings"]["population_size"] = evil
    elif where == "the space's values":
        record["settings"]["space"]["a"][-1] = evil
    else:
        record["settings"][where] = evil
    store.reset(record)
    store.close()
    with pytest.raises(StorageError) as e:
        nas.load_study(spec)
    line = str(e.value)
    assert not marker.exists()  # nothing in the file ran
    assert line.startswith(spec) and "\n" not in line
    assert ("written by nasjax 0.2" if where.startswith("the whole") else "holds a pickle (base64)") in line


@pytest.mark.parametrize(("change", "says"), [
    ({"version": 3}, "version 3; this nasjax reads version 2"),
    ({"settings": {"space": {"type": "os.system", "cmd": "touch x"}}}, "'os.system' is no space"),
    ({"settings": {"space": {"a": {"type": "float", "low": "0", "high": 1}}}}, "low and high must be finite"),
    ({"settings": {"searcher": "no_such_searcher"}}, "does not rebuild"),
    ({"settings": {"evil": 1}}, "does not rebuild"),
    ({"kind": "evil"}, "does not rebuild"),
])  # fmt: skip
def test_a_crafted_settings_record_is_refused_in_one_line(tmp_path, change, says):
    path = str(tmp_path / "study.jsonl")
    nas.create_study(SMALL, storage=path, **OPTIONS).close()
    record = first_record(path)
    for key, value in change.items():
        record[key] = {**record[key], **value} if isinstance(value, dict) else value
    write_first_record(path, record)
    with pytest.raises(StorageError) as e:
        nas.load_study(path)
    assert says in str(e.value) and str(e.value).startswith(path) and "\n" not in str(e.value)
