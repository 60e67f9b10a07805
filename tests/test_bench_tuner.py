"""The tuner's start-up bench (scripts/bench/bench_tuner.py): a quick run prints its table; bad flags are refused."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def bench(*flags):
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    return subprocess.run([sys.executable, "-m", "scripts.bench.bench_tuner", *flags], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip


def test_small_run_prints_the_table_and_a_warm_process_compiles_nothing(tmp_path):
    out = bench("--small", f"--json={tmp_path / 'b.json'}")
    assert out.returncode == 0, out.stderr[-3000:]
    assert "| first ask, from process start s | median ask+tell ms |" in out.stdout
    rows = {line.split("|")[1].strip(): line.split("|") for line in out.stdout.splitlines() if line.startswith("| ")}
    cold, warm = rows["nasjax random search, cold cache"], rows["nasjax random search, warm cache"]
    assert int(cold[7]) > 1 and warm[7] == cold[7]  # programs kept by the first process; the second added none
    assert "Study.load of a 100-trial journal" in rows and (tmp_path / "b.json").exists()


def test_trials_zero_is_refused_in_one_line():
    out = bench("--trials=0")
    assert out.returncode != 0
    assert out.stderr.strip().splitlines() == [
        "config error: --trials=0: give at least 2 (one first ask, then timed ask+tell steps)"
    ], out.stderr
