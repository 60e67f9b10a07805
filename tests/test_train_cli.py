"""``python -m scripts.train``: outputs, overrides, loud failures, rerun skips."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def train(*args, workdir):
    cmd = [sys.executable, "-m", "scripts.train", "--config", "configs/default.py", "--workdir", str(workdir), *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)


SMALL = ["--config.num_trials=4", "--config.max_queries=12", "--config.report_every=4", "--noprogress"]
TWO = "--config.only=random_search,regularized_evolution"  # fewer compiles; local search runs in test_runner


@pytest.mark.slow  # runs the CLI in new processes
def test_train_writes_outputs_and_rerun_skips(tmp_path, nb201_test_csv):
    wd = tmp_path / "run"
    r = train(
        *SMALL,
        TWO,
        f"--config.test_data={nb201_test_csv}",
        "--config.searchers.regularized_evolution.population_size=5",
        "--config.searchers.regularized_evolution.tournament_size=3",
        workdir=wd,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert "split over" not in r.stderr and "backend" not in r.stderr, r.stderr  # INFO lines need --verbosity=0
    for f in ("config.json", "summary.json", "results.csv", "curves.png", "metrics.jsonl"):
        assert (wd / f).exists(), f
    assert not (wd / ".lock").exists()
    summary = json.loads((wd / "summary.json").read_text())
    assert summary["benchmark"] == "nb201/cifar10" and summary["protocol"] == "mean"
    assert summary["split"] == "test" and summary["metric"] == "test error (%)"
    assert set(summary["searchers"]) == {"random_search", "regularized_evolution"}
    for s in summary["searchers"].values():
        assert s["queries"] == [4, 8, 12] and s["num_trials"] == 4
        assert all(3 < m < 60 for m in s["mean"]) and all(sd >= 0 for sd in s["std"])
    saved = json.loads((wd / "config.json").read_text())["searchers"]["regularized_evolution"]
    assert saved["population_size"] == 5 and saved["tournament_size"] == 3
    h = np.load(wd / "history" / "regularized_evolution.npz")
    assert h["tokens"].shape == (4, 12, 6) and h["score"].shape == h["report_score"].shape == h["cost"].shape == (4, 12)
    lines = [json.loads(x) for x in (wd / "metrics.jsonl").read_text().splitlines()]
    assert {x["searcher"] for x in lines} == set(summary["searchers"])
    # a rerun in the same workdir skips finished searchers and reports the same table
    r2 = train(
        *SMALL,
        TWO,
        f"--config.test_data={nb201_test_csv}",
        "--config.searchers.regularized_evolution.population_size=5",
        "--config.searchers.regularized_evolution.tournament_size=3",
        workdir=wd,
    )
    assert r2.returncode == 0 and r2.stdout.count("skipped") == 2, r2.stdout
    assert json.loads((wd / "summary.json").read_text())["searchers"] == summary["searchers"]


def one_line_error(r, kind="config error"):
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith(f"{kind}: "), r.stderr[-2000:]
    return lines[0]


@pytest.mark.slow  # runs the CLI in new processes
def test_train_mistakes_get_one_line_and_exit_2(tmp_path):
    line = one_line_error(train("--config.num_trails=5", workdir=tmp_path / "a"))  # typo in an override
    assert "num_trails" in line and "Did you mean" in line and "num_trials" in line
    line = one_line_error(train(*SMALL, "--config.searchers.local_search.name=local_serch", workdir=tmp_path / "b"))
    assert "unknown searcher 'local_serch'" in line and "Did you mean" in line
    cmd = [sys.executable, "-m", "scripts.train", "--config", "configs/nope.py", "--workdir", str(tmp_path / "c")]
    line = one_line_error(subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600))
    assert "config file not found: configs/nope.py" in line
    cmd[4] = "configs/table3.py:nb201/cifar11"  # get_config rejects its argument
    line = one_line_error(subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600))
    assert "get_config('nb201/cifar11')" in line and "choose one of" in line
    line = one_line_error(
        train(*SMALL, "--config.searchers.regularized_evolution.population_size=0", workdir=tmp_path / "d")
    )
    assert "population_size must be >= 1" in line
    assert not (tmp_path / "d").exists()  # nothing written: the fixed rerun is not refused
    line = one_line_error(train(*SMALL, "--config.report_every=0", workdir=tmp_path / "e"))
    assert "report_every" in line
    line = one_line_error(train(*SMALL, "--cpu_devices=-1", workdir=tmp_path / "f"))
    assert "cpu_devices" in line
    line = one_line_error(train("--config.searchers.random-search.name=x", workdir=tmp_path / "g"))
    assert "the override --config.searchers.random-search.name=x does not parse" in line
    assert "get_config" not in line and "ast." not in line
    assert not (tmp_path / "g").exists()


@pytest.mark.slow  # runs the CLI in new processes
def test_train_runs_an_option_the_config_file_does_not_set(tmp_path):
    # configs list every option of their searchers, so any option can be overridden
    r = train(*SMALL, "--config.only=local_search", "--config.searchers.local_search.full_neighborhood=true",
              workdir=tmp_path / "a")  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    entry = json.loads((tmp_path / "a" / "config.json").read_text())["searchers"]["local_search"]
    assert entry["full_neighborhood"] is True and entry["num_init"] == 10
    # without test data the job says it reports validation figures
    assert "VALIDATION" in r.stdout
    assert json.loads((tmp_path / "a" / "summary.json").read_text())["split"] == "validation"


def test_validation_note_says_where_the_test_file_goes(monkeypatch, tmp_path):
    from nas.experiment.report import missing_test_data_hint

    monkeypatch.setenv("NASJAX_DATA", str(tmp_path))
    hint = missing_test_data_hint("nb201/cifar10")
    assert str(tmp_path / "nb201" / "nats_bench_test_acc.csv") in hint and "--config.test_data" in hint
    assert missing_test_data_hint("hpolib/naval_propulsion") == "this benchmark has no test split"


def test_an_override_path_that_does_not_parse_is_named_with_the_reason():
    """ml_collections reads ``--config.<path>`` as Python: a '-', a keyword, a leading digit or an empty part
    fails there, and the line names the override, the part and how to write it (not ``get_config``)."""
    from nas.experiment.cli import flag_error_line, override_path_error

    argv = ["train", "--config=configs/multiobjective.py:nb201/cifar10,latency,constrained", "--config.num_trials=3",
            "--config.searchers.random_search-tight.constraints=latency<=0.01"]  # fmt: skip
    line = flag_error_line(ValueError("malformed node or string on line 1: <ast.Attribute object>"), argv)
    assert line == (
        "the override --config.searchers.random_search-tight.constraints=latency<=0.01 does not parse: "
        "'random_search-tight' holds '-'; a name has letters, digits and underscores only (a '-' reads as a minus); "
        "write such a key in brackets, the argument quoted for the shell: "
        "'--config.searchers[\"random_search-tight\"].constraints=...'"
    )
    assert "is a Python keyword" in override_path_error(["--config.searchers.lambda.x=1"])
    assert "'1st' starts with a digit" in override_path_error(["--config.searchers.1st.x=1"])
    assert "empty part" in override_path_error(["--config.searchers..x=1"])
    line = override_path_error(["--config.num-trials=5"])
    assert "'num-trials' holds '-'" in line and "check the field names" in line
    # paths that parse, brackets included, are left to ml_collections
    assert override_path_error(["--config.searchers['a-b'].x=1", "--config.num_trials=4", "--workdir=a-b"]) is None
