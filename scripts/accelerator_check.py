"""The speed table on an accelerator in one command: compile and run of each searcher, vmapped training, the
cold default job, host and device memory, written as JSON and Markdown (4.5 minutes on an H200 without
the tests; with them, 8 xdist workers, 8 minutes: docs/reference/scaling.md).

    python -m scripts.accelerator_check --out=/tmp/accel                  # JAX's default backend (a GPU)
    python -m scripts.accelerator_check --out=/tmp/accel --tests --test_workers=8 --time_limit=570
    python -m scripts.accelerator_check --out=/tmp/accel_small --small    # tiny sizes: a few minutes on a CPU

Each part runs in a fresh process, so its peak host memory is its own and its backend starts as a user's run
starts it (JAX on its default backend: do not set ``JAX_PLATFORMS=cpu`` on the accelerator host):

- searchers (``scripts.bench.bench_policies.time_search``: the seeds of one searcher in one compiled call,
  compile and run timed apart): random search, regularized evolution (P = 30, T = 10) and local search
  (500 seeds x 150 queries), ReMAADE and ReACTS (500 x 150), Hyperband and ASHA (W = 4; 500 seeds, a
  budget of 100 full trainings on NAS-Bench-201 at 12 and 200 epochs, where the 12-epoch table exists);
  BANANAS (100 seeds x 150 queries) as ``scripts.train`` runs it, in compiled chunks (its programs
  counted), then again with its programs compiled;
- MLP training (``scripts.bench.bench_training``): B = 256, 1,024 and 4,096 configurations of Section
  VIII's space on diabetes in one vmapped program, against one configuration at a time (the first 256
  timed; trainings per second); on an accelerator B = 1,024 also with the CPU's segment size;
- the default job cold (``scripts.bench.bench_startup``): ``scripts.train --config configs/default.py``,
  3 runs with an empty compilation cache each (wall, CPU, peak RSS), and the import of the train command;
  ``--job_threads=1,4`` runs it again with ``$NASJAX_COMPILE_THREADS`` set to each (``nas.engine.program_cache``:
  a GPU compiles one program at a time by default), every printed table compared with the first run's;
- the environment: device kind and count, platform version (CUDA), jax and jaxlib versions, date, host
  memory after importing JAX, after starting the backend and after a first program;
- ``--tests``: ``python -m pytest -m "not slow" tests`` on the same backend (counts, failures, seconds).

``--small`` runs every part at tiny sizes (a test runs it on the CPU). Writes ``<out>/accelerator_check.json``
and ``<out>/accelerator_check.md``.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import re
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from absl import flags

from nas.engine.program_cache import THREADS_ENV, whole_threads
from nas.experiment import cli
from scripts.bench import bench_startup

_OUT = flags.DEFINE_string("out", None, "Folder for accelerator_check.json and accelerator_check.md.")
_SMALL = flags.DEFINE_bool("small", False, "Tiny sizes (minutes on a CPU).")
_TESTS = flags.DEFINE_bool("tests", False, "Also run the fast test subset (pytest -m 'not slow') on the device.")
_TEST_WORKERS = flags.DEFINE_integer(
    "test_workers", 1, "pytest-xdist processes for --tests (above 1, each allocates device memory as it goes)."
)
_TEST_TIMEOUT = flags.DEFINE_integer("test_timeout", 0, "Seconds before --tests is stopped (0: none).")
_TIME_LIMIT = flags.DEFINE_integer(
    "time_limit", 0, "Seconds for the whole check (0: none): --tests is stopped when they are up (a lent machine)."
)
_ONLY = flags.DEFINE_list(
    "only", [], "Parts (default all): searchers (the table's seven) or some by name, bananas, mlp, job."
)
_FIDELITY = flags.DEFINE_string(
    "fidelity_data", "../shared/data/nb201/mini_nb201_12epoch.pd", "NB201 12-epoch table (Hyperband, ASHA)."
)
_JOB_THREADS = flags.DEFINE_list(
    "job_threads",
    [],
    "The default job again with $NASJAX_COMPILE_THREADS set to each of these (e.g. 1,4): compiles side by side "
    "against one at a time (a GPU compiles one at a time by default), with the printed tables compared.",
)
_PART_TIMEOUT = flags.DEFINE_integer("part_timeout", 600, "Seconds before a part's process is stopped.")
_PART = flags.DEFINE_string("part", "", "internal: run one part in this process and print its RESULT line")

RE = {"population_size": 30, "tournament_size": 10}
FULL = {
    "searchers": [("random_search", {}), ("regularized_evolution", RE), ("local_search", {"num_init": 10}),
                  ("remaade", {}), ("reacts", {}), ("hyperband", {}), ("asha", {"workers": 4})],
    "seeds": 500, "queries": 150, "mf_queries": 100, "bananas": (100, 150, {}),
    "batches": (256, 1024, 4096), "alone": 256, "job_runs": 3, "job_overrides": [],
}  # fmt: skip
SMALL = {
    "searchers": [("random_search", {}), ("regularized_evolution", {"population_size": 6, "tournament_size": 3}),
                  ("local_search", {"num_init": 3}),
                  ("remaade", {"batch_size": 4, "d": 8, "ppo_epochs": 1}),
                  ("reacts", {"batch_size": 4, "d": 8, "ppo_epochs": 1, "rollouts": 2, "sim_epochs": 2}),
                  ("hyperband", {}), ("asha", {"workers": 2})],
    "seeds": 4, "queries": 12, "mf_queries": 4,
    "bananas": (2, 14, {"epochs": 2, "num_members": 2, "num_layers": 2, "num_candidates": 10, "num_init": 10}),
    "batches": (4,), "alone": 2, "job_runs": 1,
    "job_overrides": ["--config.num_trials=2", "--config.max_queries=10", "--config.only=random_search"],
}  # fmt: skip


def sizes() -> dict:
    return SMALL if _SMALL.value else FULL


def rss_mb() -> tuple[float, float]:
    """(current, peak) resident memory of this process in MB (Linux ``/proc``; ``ru_maxrss`` elsewhere)."""
    try:
        with open("/proc/self/status") as f:
            found = dict(re.findall(r"^(VmRSS|VmHWM):\s+(\d+) kB", f.read(), re.M))
        return int(found["VmRSS"]) / 1024, int(found["VmHWM"]) / 1024
    except (OSError, KeyError):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        return peak, peak


def device_peak_mb():
    import jax

    stats = jax.devices()[0].memory_stats() or {}
    return round(stats["peak_bytes_in_use"] / 2**20) if "peak_bytes_in_use" in stats else None


def part_env() -> dict:
    """The environment and the host memory of starting JAX (a fresh process)."""
    import jax
    import jax.extend
    import jaxlib

    from nas.engine.devices import use_cpu_cores

    rss = {"imports (JAX, the library)": rss_mb()[0]}
    use_cpu_cores()  # as scripts.train
    devices = jax.devices()
    rss["backend started"] = rss_mb()[0]
    jax.block_until_ready(jax.jit(lambda x: x @ x)(jax.numpy.ones((256, 256))))
    rss["first program"] = rss_mb()[0]
    backend = jax.extend.backend.get_backend()
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "backend": jax.default_backend(), "device": devices[0].device_kind, "device_count": len(devices),
        "platform_version": backend.platform_version, "jax": jax.__version__, "jaxlib": jaxlib.__version__,
        "python": platform.python_version(), "host": platform.node(), "cpu_cores": os.cpu_count(),
        "load_average": os.getloadavg()[0], "rss_mb": {k: round(v) for k, v in rss.items()},
        "xla_flags": os.environ.get("XLA_FLAGS", ""), "accelerator_packages": accelerator_packages(),
    }  # fmt: skip


def accelerator_packages() -> dict[str, str]:
    """Installed versions of JAX's accelerator plugins and the CUDA wheels they pull in (empty on a CPU build)."""
    from importlib import metadata

    found = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"] or ""
        if re.match(r"(jax-cuda|jax_cuda|libtpu|nvidia-(cuda|cublas|cudnn))", name):
            found[name] = dist.version
    return dict(sorted(found.items()))


def nb201(mf: bool):
    from spaces.benchmarks.registry import make_benchmark

    return make_benchmark("nb201/cifar10", **({"fidelity_data": _FIDELITY.value} if mf else {}))


def part_search(name: str, options: dict) -> dict:
    from nas.engine.devices import use_cpu_cores
    from nas.searchers import searcher_class

    use_cpu_cores()  # before any JAX computation, as scripts.train (one device per core on a CPU)
    from scripts.bench.bench_policies import time_search

    mf = getattr(searcher_class(name), "multi_fidelity", False)
    if mf and not os.path.exists(_FIDELITY.value):
        return {"searcher": name, "skipped": f"no 12-epoch table at {_FIDELITY.value} (--fidelity_data)"}
    size = sizes()
    row = time_search(name, nb201(mf), size["seeds"], size["mf_queries" if mf else "queries"], options)
    return {**row, "options": options, "peak_rss_mb": round(rss_mb()[1])}


def part_bananas() -> dict:
    """BANANAS as ``scripts.train`` runs it (compiled chunks: its random first step, its model steps): a first
    run that compiles its programs, then a second run with new seeds and the programs compiled."""
    import jax

    from nas.engine.devices import use_cpu_cores

    use_cpu_cores()
    from nas.engine.chunked_loop import run_chunked
    from nas.searchers import make_searcher
    from scripts.bench.compile_stats import CompileStats

    seeds, queries, options = sizes()["bananas"]
    stats, bench = CompileStats(), nb201(False)
    searcher = make_searcher("bananas", bench.space, max_queries=queries, **options)
    runs = []
    for seed in (0, 1):
        before, t0, c0 = stats.snapshot(), time.perf_counter(), time.process_time()
        h = run_chunked(searcher, bench, jax.random.split(jax.random.PRNGKey(seed), seeds), progress=False)
        jax.block_until_ready(h.score)
        count, secs, _ = (a - b for a, b in zip(stats.snapshot(), before))
        runs.append({"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0, "compile_s": secs,
                     "compilations": count})  # fmt: skip
    return {"searcher": "bananas", "seeds": seeds, "queries": queries, "options": options,
            "compile_s": round(runs[0]["compile_s"], 2), "compilations": runs[0]["compilations"],
            "first_run_wall_s": round(runs[0]["wall_s"], 2), "run_s": round(runs[1]["wall_s"], 3),
            "run_cpu_s": round(runs[1]["cpu_s"], 3), "peak_rss_mb": round(rss_mb()[1]),
            "device_peak_mb": device_peak_mb()}  # fmt: skip


def mlp_objective():
    from spaces.benchmarks import uci
    from spaces.benchmarks.mlp_training import MLPTraining
    from spaces.benchmarks.registry import make_benchmark
    from spaces.hpo import HPOSpace, categorical, grid

    if not _SMALL.value:
        return make_benchmark("mlp/diabetes")
    hps = [categorical("activation", ["tanh", "relu"]), categorical("solver", ["adam", "sgd"])]
    space = HPOSpace("tiny", [*hps, grid("hidden_layer_size", [8, 16]), grid("max_iter", [10, 20])])
    return MLPTraining.build(uci.load_diabetes(split=0), space, "tiny")


def part_mlp() -> dict:
    """Trainings per second: B configurations in one vmapped program against one at a time."""
    import jax

    from scripts.bench.bench_training import compiled, timed
    from spaces.benchmarks.mlp_training import auto_segment_size

    objective, size = mlp_objective(), sizes()
    key = jax.random.PRNGKey(0)
    everything = jax.jit(jax.vmap(objective.space.sample))(jax.random.split(key, max(size["batches"])))
    n = size["alone"]
    exe, compile_s, _ = compiled(objective.query, key, everything[:1])
    t0, c0 = time.perf_counter(), time.process_time()
    for i in range(n):
        jax.block_until_ready(exe(key, everything[i : i + 1]))
    alone = {"configs": n, "per_s": n / (time.perf_counter() - t0), "per_cpu_s": n / (time.process_time() - c0),
             "compile_s": compile_s}  # fmt: skip
    rows = []
    accelerator = jax.default_backend() != "cpu"
    for b in size["batches"]:
        segments = [0] + ([auto_segment_size(b, "cpu")] if accelerator and b == 1024 else [])
        for segment in segments:
            obj = objective.replace(segment_size=segment)
            exe, compile_s, temp_mib = compiled(obj.query, key, everything[:b])
            wall, cpu = timed(exe, key, everything[:b], reps=2)
            rows.append({"batch": b, "segment_size": segment or auto_segment_size(b), "auto": not segment,
                         "per_s": b / wall, "per_cpu_s": b / cpu, "speedup": b / wall / alone["per_s"],
                         "compile_s": compile_s, "temp_mib": temp_mib})  # fmt: skip
    return {"objective": objective.name, "alone": alone, "vmapped": rows, "peak_rss_mb": round(rss_mb()[1]),
            "device_peak_mb": device_peak_mb()}  # fmt: skip


def run_part(part: str, env: dict) -> dict:
    """``python -m scripts.accelerator_check --part=<part>`` in a fresh process; its RESULT line."""
    cmd = [sys.executable, "-m", "scripts.accelerator_check", f"--part={part}", f"--small={_SMALL.value}",
           f"--fidelity_data={_FIDELITY.value}"]  # fmt: skip
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=_PART_TIMEOUT.value, check=False)
    except subprocess.TimeoutExpired:
        return {"part": part, "failed": f"stopped after {_PART_TIMEOUT.value} s"}
    found = [line for line in p.stdout.splitlines() if line.startswith("RESULT ")]
    if p.returncode != 0 or not found:
        return {"part": part, "failed": f"exit {p.returncode}: {p.stderr.strip()[-1500:]}"}
    return {"part": part, "process_s": round(time.perf_counter() - t0, 1), **json.loads(found[-1][len("RESULT ") :])}


def default_job(env: dict, threads: str = "") -> dict:
    """The default job cold (``bench_startup``'s measurement): runs with an empty compilation cache each, and
    the import of the train command; ``threads``: ``$NASJAX_COMPILE_THREADS`` for its compiles (empty: the
    backend's default, ``nas.engine.program_cache``; the import, which compiles nothing, is then not timed
    again). ``same_table``: whether every run printed the result table of the first."""
    size = sizes()
    env = {k: v for k, v in env.items() if k != THREADS_ENV} | ({THREADS_ENV: threads} if threads else {})
    imports = {}
    if not threads:
        imports = bench_startup.timed([sys.executable, "-c", bench_startup.IMPORTS], env, bench_startup.ROOT)
    runs, tables = [], []
    for _ in range(size["job_runs"]):
        with tempfile.TemporaryDirectory() as tmp:
            cmd = [sys.executable, "-m", "scripts.train", "--config=configs/default.py", f"--workdir={tmp}/wd",
                   f"--compilation_cache={tmp}/jax_cache", *size["job_overrides"]]  # fmt: skip
            r = bench_startup.timed(cmd, env, bench_startup.ROOT)
        tables.append(bench_startup.result_table(r["stdout"]))
        runs.append({"wall_s": round(r["wall"], 2), "cpu_s": round(r["cpu"], 2), "peak_rss_mb": round(r["rss_mb"]),
                     "load": round(r["load"], 2), "compile_s": bench_startup.compile_seconds(r["stderr"])})  # fmt: skip
    return {"overrides": size["job_overrides"], "compile_threads": threads or "default", "runs": runs,
            "median_wall_s": statistics.median(r["wall_s"] for r in runs),
            "median_cpu_s": statistics.median(r["cpu_s"] for r in runs),
            **{f"import_{k}_s": round(imports[k], 2) for k in ("wall", "cpu") if k in imports},
            "table": tables[0], "same_table": all(t == tables[0] for t in tables)}  # fmt: skip


def compile_threads_jobs(env: dict, settings: list[str], default: dict) -> list[dict]:
    """The default job with each ``$NASJAX_COMPILE_THREADS`` of ``settings``; ``same_table`` now also
    compares its tables with the ``default`` setting's (side-by-side compiles must not change a number)."""
    out = []
    for threads in settings:
        job = default_job(env, threads)
        job["same_table"] = job["same_table"] and job["table"] == default["table"]
        out.append(job)
        print(f"default job, {THREADS_ENV}={threads}: {job}", flush=True)
    return out


def fast_tests(env: dict, out: str, timeout: float | None, workers: int = 1) -> dict:
    """``pytest -m "not slow" tests`` on the default backend: the summary counts, failed tests, seconds.

    The per-test log streams to ``<out>/tests.log``, so a run stopped at ``--test_timeout`` still says how far
    it got. With several workers, each process takes device memory as it needs it instead of JAX's default
    share of the whole device (``XLA_PYTHON_CLIENT_PREALLOCATE=false``).
    """
    cmd = [sys.executable, "-m", "pytest", "-rfE", "-m", "not slow", "-p", "no:cacheprovider", "tests"]
    cmd += ["-q"] if workers == 1 else ["-n", str(workers), "-v"]
    if workers > 1:
        env = dict(env, XLA_PYTHON_CLIENT_PREALLOCATE="false")
    log_path = os.path.join(out, "tests.log")
    t0 = time.perf_counter()
    with open(log_path, "w") as log:
        p = subprocess.Popen(cmd, env=env, cwd=bench_startup.ROOT, stdout=log, stderr=subprocess.STDOUT, text=True,
                             start_new_session=True)  # fmt: skip
        try:
            exit_code = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)  # pytest and its xdist workers
            p.wait()
            exit_code = f"stopped after {timeout:.0f} s"
    with open(log_path) as f:
        lines = f.read().strip().splitlines() or [""]
    summary = [line for line in lines if re.search(r"\d+ (passed|failed)", line)] or [""]
    counts = {k: int(v) for v, k in re.findall(r"(\d+) (passed|failed|skipped|errors?|deselected)", summary[-1])}
    if not isinstance(exit_code, int):  # no summary line: count the verbose per-test lines so far
        for outcome in ("passed", "failed", "skipped", "error"):
            counts[outcome] = sum(f" {outcome.upper()} " in f" {line} " for line in lines)
    failed = {line.split(" - ")[0][len("FAILED ") :] for line in lines if line.startswith(("FAILED ", "ERROR "))}
    return {"counts": counts, "failed": sorted(failed), "exit": exit_code, "workers": workers,
            "wall_s": round(time.perf_counter() - t0, 1)}  # fmt: skip


def label(row: dict) -> str:
    """``searcher, S seeds x Q queries`` (multi-fidelity: Q full trainings)."""
    if "queries" not in row:
        return row.get("searcher", row.get("part", "?"))
    what = "full trainings" if row["searcher"] in ("hyperband", "asha") else "queries"
    return f"{row['searcher']}, {row['seeds']} seeds x {row['queries']} {what}"


def markdown(report: dict) -> str:
    e = report["environment"]
    out = [f"# Accelerator check ({'small sizes' if report['small'] else 'full sizes'})", "",
           f"{e.get('device')} x {e.get('device_count')} ({e.get('backend')}, {e.get('platform_version')}), jax "
           f"{e.get('jax')}, jaxlib {e.get('jaxlib')}, Python {e.get('python')}, {e.get('date')}, {e.get('cpu_cores')} "
           f"CPU cores, load {e.get('load_average', float('nan')):.2f} before; host RSS (MB): {e.get('rss_mb')}; "
           f"packages: {e.get('accelerator_packages') or 'no accelerator plugin'}", "",
           "| work | compile (s) | run (s) | run, CPU (s) | host peak RSS (MB) | device peak (MB) |",
           "|---|---|---|---|---|---|"]  # fmt: skip
    for r in report["searchers"]:
        if "compile_s" not in r:
            out.append(f"| {label(r)} | {r.get('skipped') or r.get('failed', '')[:200]} | | | | |")
            continue
        programs = f" ({r['compilations']} compilations)" if "compilations" in r else ""
        out.append(f"| {label(r)} | {r['compile_s']:.2f}{programs} | {r['run_s']:.3f} | {r['run_cpu_s']:.3f} | "
                   f"{r['peak_rss_mb']:.0f} | {r.get('device_peak_mb')} |")  # fmt: skip
    m = report.get("mlp")
    if m and "alone" in m:
        a = m["alone"]
        out += ["", f"MLP training ({m['objective']}): one at a time {a['per_s']:.1f} trainings/s ({a['configs']} "
                f"timed, compile {a['compile_s']:.1f} s); host peak {m['peak_rss_mb']} MB, device peak "
                f"{m['device_peak_mb']} MB", "",
                "| B | segment rows | vmapped, trainings/s | per CPU-second | vmapped / one at a time | compile (s) |",
                "|---|---|---|---|---|---|"]  # fmt: skip
        for r in m["vmapped"]:
            auto = "" if r["auto"] else " (CPU rule)"
            out.append(f"| {r['batch']:,} | {r['segment_size']}{auto} | {r['per_s']:,.0f} | {r['per_cpu_s']:,.0f} | "
                       f"{r['speedup']:.1f}x | {r['compile_s']:.1f} |")  # fmt: skip
    elif m:
        out += ["", f"MLP training: {m.get('failed')}"]
    j = report.get("default_job")
    if j:
        walls = " / ".join(f"{r['wall_s']:.2f}" for r in j["runs"])
        cpus = " / ".join(f"{r['cpu_s']:.2f}" for r in j["runs"])
        rss = max(r["peak_rss_mb"] for r in j["runs"])
        runs = f"{len(j['runs'])} runs {' '.join(j['overrides'])}".strip()
        differ = "" if j["same_table"] else "; **the runs printed other tables**"
        out += ["", f"Default job cold ({runs}): median {j['median_wall_s']:.2f} s wall ({walls}), CPU {cpus} s, "
                f"peak RSS {rss} MB; import of the train command {j['import_wall_s']:.2f} s wall "
                f"({j['import_cpu_s']:.2f} s CPU){differ}"]  # fmt: skip
    for t in report.get("default_job_threads", []):
        walls = " / ".join(f"{r['wall_s']:.2f}" for r in t["runs"])
        compiles = " / ".join(f"{sum(r['compile_s'].values()):.1f}" for r in t["runs"])
        same = "the same table" if t["same_table"] else "**another table**"
        out.append(f"- with {THREADS_ENV}={t['compile_threads']}: median {t['median_wall_s']:.2f} s wall ({walls}), "
                   f"compile lines {compiles} s, CPU median {t['median_cpu_s']:.2f} s, {same}")  # fmt: skip
    t = report.get("tests")
    if t:
        out += ["", f"Fast tests on the device: {t['counts']} in {t['wall_s']:.0f} s; failed: {t['failed'] or 'none'}"]
    return "\n".join(out) + "\n"


def main(argv):
    del argv
    if _PART.value:
        kind, _, name = _PART.value.partition(":")
        options = dict(sizes()["searchers"]).get(name, {})
        part = {"env": part_env, "bananas": part_bananas, "mlp": part_mlp}.get(kind)
        print("RESULT " + json.dumps(part() if part else part_search(name, options)), flush=True)
        return 0
    if not _OUT.value:
        raise cli.ConfigError("give --out=<folder> for accelerator_check.json and accelerator_check.md")
    table = [name for name, _ in sizes()["searchers"]]
    parts = ["searchers", *table, "bananas", "mlp", "job"]
    unknown = set(_ONLY.value) - set(parts)
    if unknown:
        raise cli.ConfigError(f"--only: unknown parts {sorted(unknown)}; choose from {', '.join(parts)}")
    wanted = set(_ONLY.value) or {"searchers", "bananas", "mlp", "job"}
    bad = [t for t in _JOB_THREADS.value if whole_threads(t) is None]
    if bad:
        raise cli.ConfigError(f"--job_threads: {bad} are not whole numbers >= 1; give e.g. --job_threads=1,4")
    out = cli.output_folder(_OUT.value, "out")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [bench_startup.ROOT, os.environ.get("PYTHONPATH")])))
    env.pop("JAX_COMPILATION_CACHE_DIR", None)  # cold: nothing read from a persistent cache
    t0 = time.perf_counter()
    report = {"small": _SMALL.value, "environment": run_part("env", env), "searchers": []}
    print(f"environment: {report['environment']}", flush=True)
    for name in [n for n in table if "searchers" in wanted or n in wanted]:
        report["searchers"].append(run_part(f"search:{name}", env))
        print(f"{name}: {report['searchers'][-1]}", flush=True)
    if "bananas" in wanted:
        report["searchers"].append(run_part("bananas", env))
        print(f"bananas: {report['searchers'][-1]}", flush=True)
    if "mlp" in wanted:
        report["mlp"] = run_part("mlp", env)
        print(f"mlp: {report['mlp']}", flush=True)
    if "job" in wanted:
        report["default_job"] = default_job(env)
        print(f"default job: {report['default_job']}", flush=True)
        if _JOB_THREADS.value:
            report["default_job_threads"] = compile_threads_jobs(env, _JOB_THREADS.value, report["default_job"])
    if _TESTS.value:
        limits = [_TEST_TIMEOUT.value, _TIME_LIMIT.value and max(1.0, _TIME_LIMIT.value - (time.perf_counter() - t0))]
        report["tests"] = fast_tests(env, out, min([t for t in limits if t], default=None), _TEST_WORKERS.value)
        print(f"tests: {report['tests']}", flush=True)
    report["wall_s"] = round(time.perf_counter() - t0, 1)
    with open(os.path.join(out, "accelerator_check.json"), "w") as f:
        json.dump(report, f, indent=1)
    with open(os.path.join(out, "accelerator_check.md"), "w") as f:
        f.write(markdown(report))
    print(markdown(report))
    failed = [r for r in [report["environment"], *report["searchers"], report.get("mlp") or {}] if "failed" in r]
    jobs = [j for j in [report.get("default_job"), *report.get("default_job_threads", [])] if j]
    failed += [j for j in jobs if not j["same_table"]]  # the same config and seed must print the same numbers
    return 1 if failed else 0


if __name__ == "__main__":
    cli.run(main)
