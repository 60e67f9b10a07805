"""The tuner's start-up and overhead, side by side with Optuna: each sampler in fresh processes.

    python -m scripts.bench.bench_tuner                  # 200 trials, every row, cold and warm cache, 3 runs
    python -m scripts.bench.bench_tuner --small          # a quick check: 20 trials, 100 replayed
    python -m scripts.bench.bench_tuner --json=/tmp/bench_tuner.json

Per row, a fresh process imports the library, creates a study on a small space (a log Float, an Int, a
categorical) and runs ``--trials`` sequential ask+tell with a trivial objective. Measured in the child:
the time from the parent's launch to the first ask's return, the median ask+tell, CPU seconds
(``resource.getrusage``) and peak RSS (``VmHWM``: Linux's ``ru_maxrss`` keeps the parent's peak across
exec); by the parent: the whole process's wall seconds. nasjax rows run twice with one new, empty
compilation cache folder (``$NASJAX_COMPILATION_CACHE``): cold (everything compiles), then warm (a
second process, same folder; the cache's file count after each run says whether it compiled). With
evolution's warm cache, its study runs 20 trials with ``optimize`` on 2 process workers (``backend="process"``):
its first column is then the first result's arrival (its ``datetime_complete``) from the parent's launch,
workers' start-up included. A last row replays a ``--replay``-trial journal with ``Study.load``. Reference
rows: ``import jax`` alone. The library's TPE row stands beside Optuna's ``TPESampler`` (both take the ranges
continuously). Rows ``..., one core`` run evolution's and ASHA's warm process on one CPU (its affinity set
before JAX starts: XLA's thread pool then has one thread, on the core of the Python thread). Each row runs
``--runs`` times, the rows in turn, and every figure is the median of its runs. Optuna is optional (``pip install
optuna``): without it its rows are left out, saying so.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from absl import flags

from nas.engine.devices import CACHE_ENV
from nas.experiment import cli
from nas.experiment.config_fields import ConfigError

_TRIALS = flags.DEFINE_integer("trials", 200, "sequential ask+tell per process")
_REPLAY = flags.DEFINE_integer("replay", 1000, "trials in the journal that Study.load replays (0: no row)")
_SMALL = flags.DEFINE_bool("small", False, "a quick check: 20 trials, a 100-trial journal, nasjax random search, 1 run")
_RUNS = flags.DEFINE_integer("runs", 3, "processes per row (the rows in turn); each figure is their median")
_JSON = flags.DEFINE_string("json", "", "also write the figures here (JSON)")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

OPTUNA = """
import optuna
optuna.logging.set_verbosity(optuna.logging.WARNING)
study = optuna.create_study(sampler=optuna.samplers.{sampler}(seed=0))
def ask():
    t = study.ask()
    p = dict(lr=t.suggest_float("lr", 1e-4, 1e-1, log=True), width=t.suggest_int("width", 8, 256),
             act=t.suggest_categorical("act", ["relu", "tanh", "gelu"]))
    return t, p
def tell(t, p):
    study.tell(t, objective(p))
"""
NASJAX = """
import nas
space = {{"lr": nas.Float(1e-4, 1e-1, log=True), "width": nas.Int(8, 256), "act": ["relu", "tanh", "gelu"]}}
study = nas.Study(space, searcher="{searcher}", direction="minimize", seed=0, {budget}{extra})
def ask():
    t = study.ask()
    return t, t.params
def tell(t, p):
    study.tell(t, objective(p))
"""
LOOP = """
import statistics
def objective(p):
    return (p["lr"] - 0.01) ** 2 + abs(p["width"] - 64) / 256 + {"relu": 0.0, "tanh": 0.1, "gelu": 0.2}[p["act"]]
t, p = ask()
first = time.time() - START
tell(t, p)
steps = []
for _ in range(TRIALS - 1):
    c = time.perf_counter(); t, p = ask(); tell(t, p); steps.append(time.perf_counter() - c)
RESULT.update(first_s=first, step_ms=1e3 * statistics.median(steps) if steps else 0.0)
"""
# every child: its start time, and at exit its figures on one line (CPU and peak RSS: its own)
PROLOGUE = "import time, json, resource\nSTART, TRIALS, RESULT = {start!r}, {trials}, {{}}\n"
ONE_CORE = "import os\nos.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # before JAX sizes its thread pool\n"
ONE_CORE_ROWS = ("nasjax regularized evolution", "nasjax ASHA")  # their warm processes again, on one CPU
EPILOGUE = """
u = resource.getrusage(resource.RUSAGE_SELF)
RESULT.update(cpu_s=u.ru_utime + u.ru_stime, rss_mb=u.ru_maxrss / 1024)
try:  # Linux's ru_maxrss outlives exec (the parent's peak would count): the process's own high-water mark
    hwm = [line for line in open("/proc/self/status") if line.startswith("VmHWM:")]
    RESULT["rss_mb"] = int(hwm[0].split()[1]) / 1024
except (OSError, IndexError):
    pass
print("RESULT", json.dumps(RESULT))
"""
REPLAY = """
import nas
space = {{"lr": nas.Float(1e-4, 1e-1, log=True), "width": nas.Int(8, 256), "act": ["relu", "tanh", "gelu"]}}
study = nas.Study(space, searcher="random_search", direction="minimize", seed=0, max_trials={n}, storage={path!r})
for _ in range({n}):
    t = study.ask(); study.tell(t, t.params["lr"])
study.close()
c = time.perf_counter(); loaded = nas.load_study({path!r}); RESULT["replay_s"] = time.perf_counter() - c
assert len(loaded.trials) == {n}, len(loaded.trials)
"""
JAX_ONLY = "import jax, jax.numpy as jnp\nRESULT['first_s'] = time.time() - START\n"
WORKERS = """
import nas
space = {{"lr": nas.Float(1e-4, 1e-1, log=True), "width": nas.Int(8, 256), "act": ["relu", "tanh", "gelu"]}}
study = nas.Study(space, searcher="{searcher}", direction="minimize", seed=0, max_trials={budget})
def objective(trial):
    p = trial.params
    return (p["lr"] - 0.01) ** 2 + abs(p["width"] - 64) / 256
study.optimize(objective, n_trials={n}, n_workers={w}, backend="process", show_progress=False)
RESULT["first_s"] = min(t.datetime_complete.timestamp() for t in study.trials if t.state == "complete") - START
"""
WORKER_ROW = ("regularized_evolution", 2, 20)  # searcher, process workers, trials: the first result's arrival


def programs(trials: int, small: bool) -> dict[str, str]:
    """``{label: child program}``: Optuna's two samplers (unless ``small``), then the nasjax searchers."""
    nasjax = {"nasjax random search": ("random_search", "")}
    out = {}
    if not small:
        nasjax["nasjax regularized evolution"] = ("regularized_evolution", "")
        nasjax["nasjax ASHA"] = ("asha", ", fidelities=[1, 3, 9]")
        nasjax["nasjax TPE"] = ("tpe", "")  # beside Optuna's TPESampler: ranges taken continuously, as Optuna's
        try:
            import optuna  # noqa: F401 - optional: only its rows need it
        except ImportError:
            print("Optuna rows left out: pip install optuna")
        else:
            for sampler in ("RandomSampler", "TPESampler"):
                out[f"Optuna {sampler}"] = OPTUNA.format(sampler=sampler) + LOOP
    for label, (searcher, extra) in nasjax.items():  # ASHA's budget: `trials` full trainings (ample)
        budget = f"max_resource={trials} * 9" if searcher == "asha" else f"max_trials={trials}"
        out[label] = NASJAX.format(searcher=searcher, budget=budget, extra=extra) + LOOP
    return out


def timed(code: str, trials: int, env: dict) -> dict:
    """Runs ``code`` in a fresh ``python -c``: its figures (first ask, median step, CPU, peak RSS) and the
    parent's wall seconds of the whole process."""
    load = os.getloadavg()[0]
    start = time.time()
    full = PROLOGUE.format(start=start, trials=trials) + code + EPILOGUE
    p = subprocess.run([sys.executable, "-c", full], cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.time() - start
    if p.returncode != 0:
        raise RuntimeError(f"the child process failed ({p.returncode}):\n{p.stderr[-3000:]}")
    result = next(json.loads(line[7:]) for line in p.stdout.splitlines() if line.startswith("RESULT "))
    return {**result, "wall_s": wall, "load": load}


def cache_files(folder: str) -> int:
    return sum(len(files) for _, _, files in os.walk(folder)) if os.path.isdir(folder) else 0


def cell(r: dict, key: str, fmt: str) -> str:
    return format(r[key], fmt) if key in r else ""


def one_core_available() -> bool:
    return hasattr(os, "sched_setaffinity") and len(os.sched_getaffinity(0)) > 1


def median_row(runs: list[dict]) -> dict:
    """Each figure's median over the runs of a row (the load: the highest)."""
    keys = [k for k in runs[0] if isinstance(runs[0][k], (int, float))]
    row = {k: statistics.median(r[k] for r in runs) for k in keys}
    row["load"] = max(r["load"] for r in runs)
    return row


def run_once(trials: int, replay: int, small: bool, env: dict, tmp: str, n: int) -> dict[str, dict]:
    """One process per row (run ``n``: its own new cache folders and journal)."""
    results = {"import jax only": timed(JAX_ONLY, trials, env)}
    for label, code in programs(trials, small).items():
        if not label.startswith("nasjax"):
            results[label] = timed(code, trials, env)
            continue
        cache = os.path.join(tmp, f"{label.replace(' ', '_')}_{n}")  # new and empty: cold, then warm
        for kind in ("cold", "warm"):
            r = timed(code, trials, dict(env, **{CACHE_ENV: cache}))
            results[f"{label}, {kind} cache"] = {**r, "cache_files": cache_files(cache)}
        if label in ONE_CORE_ROWS and one_core_available():
            results[f"{label}, warm cache, one core"] = timed(ONE_CORE + code, trials, dict(env, **{CACHE_ENV: cache}))
        if label == "nasjax regularized evolution":  # its warm cache: the workers' first result
            searcher, w, n_trials = WORKER_ROW
            code = WORKERS.format(searcher=searcher, w=w, n=n_trials, budget=trials)  # the warm row's programs
            r = timed(code, trials, dict(env, **{CACHE_ENV: cache}))
            results[f"{label}, {w} process workers, warm cache: first result"] = r
    if replay:
        code = REPLAY.format(n=replay, path=os.path.join(tmp, f"journal_{n}.jsonl"))
        results[f"Study.load of a {replay}-trial journal"] = timed(code, trials, dict(env, **{CACHE_ENV: ""}))
    return results


def main(argv) -> None:
    del argv
    if _TRIALS.value < 2:
        raise ConfigError(f"--trials={_TRIALS.value}: give at least 2 (one first ask, then timed ask+tell steps)")
    if _REPLAY.value < 0:
        raise ConfigError(f"--replay={_REPLAY.value}: give 0 (no replay row) or a number of trials")
    if _RUNS.value < 1:
        raise ConfigError(f"--runs={_RUNS.value}: give at least 1 (processes per row)")
    json_path = cli.output_file(_JSON.value, "json", "bench_tuner.json") if _JSON.value else ""  # checked first
    trials = min(_TRIALS.value, 20) if _SMALL.value else _TRIALS.value
    replay = min(_REPLAY.value, 100) if _SMALL.value else _REPLAY.value
    runs = 1 if _SMALL.value else _RUNS.value
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    env.setdefault("JAX_PLATFORMS", "cpu")
    for name in ("JAX_COMPILATION_CACHE_DIR", "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"):
        env.pop(name, None)  # the Study's own cache settings are what is measured
    if not _SMALL.value and not one_core_available():
        print("one-core rows left out: this machine cannot set a process's CPU affinity, or has one CPU")
    with tempfile.TemporaryDirectory() as tmp:
        every = [run_once(trials, replay, _SMALL.value, env, tmp, n) for n in range(runs)]
    results = {label: median_row([r[label] for r in every]) for label in every[0]}
    load = max(r["load"] for r in results.values())
    each = "one run each" if runs == 1 else f"the median of {runs} runs each"
    print(f"{trials} sequential ask+tell per process; {each}; load average up to {load:.1f}\n")
    print("| | first ask, from process start s | median ask+tell ms | whole process wall s | CPU s "
          "| peak RSS MB | cache files after |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for label, r in results.items():
        first = cell(r, "replay_s", ".2f") + (" (replay)" if "replay_s" in r else "") or cell(r, "first_s", ".2f")
        files = f"{r['cache_files']:.0f}" if "cache_files" in r else ""
        print(f"| {label} | {first} | {cell(r, 'step_ms', '.2f')} | {r['wall_s']:.2f} | {r['cpu_s']:.2f} "
              f"| {r['rss_mb']:.0f} | {files} |")  # fmt: skip
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"trials": trials, "replay": replay, "runs": runs, "rows": results}, f, indent=1)


if __name__ == "__main__":
    cli.run(main)
