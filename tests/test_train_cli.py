"""``python -m scripts.train``: outputs, overrides, loud failures, rerun skips."""

import json
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def train(*args, workdir):
    cmd = [sys.executable, "-m", "scripts.train", "--config", "configs/default.py", "--workdir", str(workdir), *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)


SMALL = ["--config.num_trials=4", "--config.max_queries=12", "--config.report_every=4", "--noprogress"]
TWO = "--config.only=random_search,regularized_evolution"  # fewer compiles; local search runs in test_runner


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
    for f in ("config.json", "summary.json", "results.csv", "curves.png", "metrics.jsonl"):
        assert (wd / f).exists(), f
    summary = json.loads((wd / "summary.json").read_text())
    assert summary["benchmark"] == "nb201/cifar10" and summary["protocol"] == "mean"
    assert summary["split"] == "test" and summary["metric"] == "test error (%)"
    assert set(summary["searchers"]) == {"random_search", "regularized_evolution"}
    for s in summary["searchers"].values():
        assert s["queries"] == [4, 8, 12] and s["num_trials"] == 4
        assert all(3 < m < 60 for m in s["mean"]) and all(sd >= 0 for sd in s["std"])
    assert json.loads((wd / "config.json").read_text())["searchers"]["regularized_evolution"]["population_size"] == 5
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


def test_train_fails_loudly(tmp_path):
    r = train("--config.num_trails=5", workdir=tmp_path / "a")  # typo in an override
    assert r.returncode != 0 and "num_trails" in r.stderr
    r = train(*SMALL, "--config.searchers.local_search.name=local_serch", workdir=tmp_path / "b")
    assert r.returncode == 2 and "unknown searcher 'local_serch'" in r.stderr and "Did you mean" in r.stderr
    r = train(*SMALL, "--config.benchmark=nb201/cifar11", workdir=tmp_path / "c")
    assert r.returncode == 2 and "unknown benchmark" in r.stderr
    # without test data the job says it reports validation error
    r = train(*SMALL, "--config.only=random_search", workdir=tmp_path / "d")
    assert r.returncode == 0 and "VALIDATION" in r.stdout
    assert json.loads((tmp_path / "d" / "summary.json").read_text())["split"] == "validation"
