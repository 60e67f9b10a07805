"""Time to the first result: the default job as a new user runs it, whole process, cold compilation cache.

    python -m scripts.bench.bench_startup --runs=3
    python -m scripts.bench.bench_startup --runs=3 --config=configs/default.py:... --cold_tables
    python -m scripts.bench.bench_startup --runs=3 --study          # the README's 16-trial Study example
    python -m scripts.bench.bench_startup --runs=3 --repo=/path/to/another/checkout   # e.g. an older commit
    python -m scripts.bench.bench_startup --phases          # one cold run, CPU seconds per phase

Each run is ``python -m scripts.train --config <config> --workdir <new folder>`` in a fresh process with an
empty JAX compilation cache (a new ``--compilation_cache`` folder), so every program compiles, as on a
first run. Measured per run: wall seconds from start to exit, CPU seconds of the process (user + system:
the figure to compare on a shared machine, where wall time depends on the other jobs), peak RSS, and the
1-minute load average before it started. The parsed benchmark tables (``$NASJAX_CACHE``) stay warm unless
``--cold_tables`` (then the first parse of the package's pickle is timed too). Where the time goes: the
import of the train command's modules (a separate process), and the ``compiling <searchers> ... N s``
line of each run (``nas.engine.compile_notice``). The printed result table must be the same in every
run; the script fails otherwise. ``--study`` times the README's ask/tell example instead (a Study of
regularized evolution, 16 trials in batches of 4 on a 32-configuration space), also cold: each run's
Study keeps its programs in an empty cache of its own (``$NASJAX_COMPILATION_CACHE``). ``--repo`` runs
another checkout's code (the same measurement before a change).
``--phases`` runs the default job once in a fresh process that times each phase in CPU seconds (load-
independent, unlike wall time on a shared machine): imports, loading the table, the compile of every
searcher's programs (together, ``nas.engine.program_cache``), per searcher the rest (running,
checkpoints, metrics), the reports and matplotlib's import.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

from absl import flags

from nas.engine.devices import CACHE_ENV
from nas.experiment import cli

_RUNS = flags.DEFINE_integer("runs", 3, "Cold runs (the median is reported).")
_CONFIG = flags.DEFINE_string("config", "configs/default.py", "Config of the job.")
_COLD_TABLES = flags.DEFINE_bool("cold_tables", False, "Empty table cache too ($NASJAX_CACHE).")
_STUDY = flags.DEFINE_bool("study", False, "Time the README's Study example instead of the train job.")
_REPO = flags.DEFINE_string("repo", "", "Checkout whose code runs (default: this one).")
_PHASES = flags.DEFINE_bool("phases", False, "One cold run of the default job, CPU seconds per phase.")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
IMPORTS = "import scripts.train, nas.experiment.run, nas.experiment.report, nas.searchers, matplotlib.figure"
STUDY = """
from concurrent.futures import ThreadPoolExecutor
from nas.host.study import Study

def objective(trial):
    p = trial.params
    return (p["lr"] - 0.01) ** 2 * 1e4 + 0.1 * p["layers"] + {"relu": 0.0, "tanh": 0.2}[p["act"]]

study = Study({"lr": [0.001, 0.003, 0.01, 0.03], "layers": [1, 2, 3, 4], "act": ["relu", "tanh"]},
              searcher="regularized_evolution", direction="minimize", seed=0, max_trials=16,
              population_size=6, tournament_size=3)
with ThreadPoolExecutor(4) as pool:
    study.optimize(objective, n_trials=16, batch_size=4, executor=pool)
print("| best", study.best_params, study.best_value)
"""


PHASES = """
import sys, tempfile, time
cpu = time.process_time
out = []
c = cpu(); import jax; from nas.engine.devices import enable_compilation_cache, use_cpu_cores
use_cpu_cores(0); out.append(("import jax", cpu() - c))
c = cpu(); import configs.default, nas.searchers; from nas.engine import chunked_loop
from nas.experiment import run as R
from nas.experiment import report as rep; out.append(("import the library", cpu() - c))
tmp = tempfile.mkdtemp(); enable_compilation_cache(tmp + "/jax_cache")
compile_cpu = [0.0]

def timing(fn):
    def wrapped(*a, **k):
        c = cpu(); r = fn(*a, **k); compile_cpu[0] += cpu() - c; return r
    return wrapped

chunked_loop.compile_ahead = timing(chunked_loop.compile_ahead)
run_chunked, build_benchmark, write_reports = R.run_chunked, R.build_benchmark, R.write_reports
compile_fresh_runs = R.compile_fresh_runs

def together(*a, **k):
    c = cpu(); compile_fresh_runs(*a, **k); out.append(("compile every searcher's programs, together", cpu() - c))

def chunked(searcher, *a, **k):
    c, c0 = cpu(), compile_cpu[0]; h = run_chunked(searcher, *a, **k); spent = compile_cpu[0] - c0
    if spent > 0.005:
        out.append((f"{k['label']}: compile", spent))
    out.append((f"{k['label']}: run and host work", cpu() - c - spent))
    return h

def bench(*a, **k):
    c = cpu(); b = build_benchmark(*a, **k); out.append(("load the table", cpu() - c)); return b

def reports(*a, **k):
    c = cpu(); import matplotlib.figure; out.append(("import matplotlib", cpu() - c))
    c = cpu(); s = write_reports(*a, **k); out.append(("reports (summary, CSV, plot)", cpu() - c)); return s

R.run_chunked, R.build_benchmark, R.write_reports, R.compile_fresh_runs = chunked, bench, reports, together
R.run_experiment(configs.default.get_config(), tmp + "/wd", progress=False)
for name, secs in out:
    print(f"| {name} | {secs:.2f} |")
print(f"| total CPU of the process | {cpu():.2f} |")
"""


def timed(cmd: list[str], env: dict, cwd: str) -> dict:
    """Runs ``cmd`` in ``cwd``; wall and CPU seconds, peak RSS (MB), stdout and stderr of the process."""
    load = os.getloadavg()[0]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        res = {"stdout": out.read(), "stderr": err.read()}
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n{res['stderr'][-3000:]}")
    cpu = usage.ru_utime + usage.ru_stime
    return {**res, "wall": wall, "cpu": cpu, "rss_mb": usage.ru_maxrss / 1024, "load": load}


def compile_seconds(stderr: str) -> dict[str, float]:
    """``{label: seconds}`` from the ``compiling <label> ... N s`` lines."""
    found = re.findall(r"compiling (.+?)(?: \([^)]*\))? \.\.\. (\d+\.\d) s", stderr.replace("\r", "\n"))
    out: dict[str, float] = {}
    for label, secs in found:
        out[label] = out.get(label, 0.0) + float(secs)
    return out


def result_table(stdout: str) -> str:
    return "\n".join(line for line in stdout.splitlines() if line.startswith("|") or " of the incumbent " in line)


def main(argv):
    del argv
    repo = os.path.abspath(_REPO.value or ROOT)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [repo, os.environ.get("PYTHONPATH")])))
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    if _PHASES.value:
        r = timed([sys.executable, "-c", PHASES], env, repo)
        print(f"one cold run of configs/default.py, load {r['load']:.2f} before, {r['wall']:.2f} s wall\n")
        print("| phase | CPU s |\n|---|---|\n" + r["stdout"].strip())
        return
    imports = timed([sys.executable, "-c", IMPORTS], env, repo)
    print(f"{repo}: imports of the train command: {imports['wall']:.2f} s wall, {imports['cpu']:.2f} s CPU")
    runs, tables = [], set()
    for i in range(_RUNS.value):
        with tempfile.TemporaryDirectory() as tmp:
            run_env = dict(env, NASJAX_CACHE=os.path.join(tmp, "tables")) if _COLD_TABLES.value else dict(env)
            run_env[CACHE_ENV] = os.path.join(tmp, "jax_cache")  # a Study's default compilation cache: empty
            cmd = [sys.executable, "-m", "scripts.train", f"--config={_CONFIG.value}", f"--workdir={tmp}/wd",
                   f"--compilation_cache={tmp}/jax_cache"]  # fmt: skip
            r = timed([sys.executable, "-c", STUDY] if _STUDY.value else cmd, run_env, repo)
        runs.append(r)
        tables.add(result_table(r["stdout"]))
        compiles = ", ".join(f"{k} {v:.1f}" for k, v in compile_seconds(r["stderr"]).items())
        print(f"run {i + 1}: {r['wall']:.2f} s wall, {r['cpu']:.2f} s CPU, peak {r['rss_mb']:.0f} MB, "
              f"load {r['load']:.2f} before; compile s: {compiles}", flush=True)  # fmt: skip
    if len(tables) != 1:
        raise RuntimeError("the runs printed different tables:\n" + "\n\n".join(sorted(tables)))
    walls, cpus = [r["wall"] for r in runs], [r["cpu"] for r in runs]
    what = "the README's Study example" if _STUDY.value else _CONFIG.value
    print(f"\n{what}, cold compilation cache, {len(runs)} runs: median {statistics.median(walls):.2f} s "
          f"wall (min {min(walls):.2f}, max {max(walls):.2f}), median {statistics.median(cpus):.2f} s CPU")  # fmt: skip
    print(tables.pop())


if __name__ == "__main__":
    cli.run(main)
