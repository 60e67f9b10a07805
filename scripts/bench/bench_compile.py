"""Where compile time goes: every registered searcher's default run, program by program, cold.

    python -m scripts.bench.bench_compile                                  # every searcher, 20 seeds
    python -m scripts.bench.bench_compile --searchers=bananas,gp_bo --json=/tmp/compile.json
    python -m scripts.bench.bench_compile --searchers=random_search --seeds=4 --max_queries=12   # a quick look
    python -m scripts.bench.bench_compile --benchmarks=nb201/cifar10,byo24 --max_queries=20     # tiny vs large
    python -m scripts.bench.bench_compile --searchers=gp_bo --together     # the wall time a run waits for

Each searcher runs in a fresh child process with an empty persistent compilation cache (a new temporary
folder, kept as ``scripts.train`` keeps its cache: programs slower than 0.05 s to compile are written to it),
as ``scripts.train`` runs it: ``nas.engine.chunked_loop.run_chunked`` over ``--seeds`` seeds on NAS-Bench-201
cifar10, the seeds split over one JAX device per core. The programs' shapes do not depend on the seed count
beyond their leading axis, so 20 seeds compile as 500 do. Its options are the searcher's defaults with the
budget of the config that runs it (150 queries; the multi-fidelity searchers: 100 full trainings at 12 and
200 epochs as ``configs/multifidelity.py``, with the 12-epoch table where ``--fidelity_data`` exists) and,
for ``warm_start``, a 4-string design (it has no default design); the multi-objective searchers take
``configs/multiobjective.py``'s options and record its metric (NB201: latency), and are skipped on the
tables without metrics. ``--benchmarks`` takes several tables:
``byo24`` is docs/tutorials/extending.md's 24-row table of your own (``scripts.bench.small_tables``), to see whether a
tiny table compiles as fast as a large one (with ``--max_queries=20``, below its size; multi-fidelity
searchers are skipped on tables without fidelities). ``--xla_options`` compiles every chunk program with
other XLA options (its init program then at level 0), to compare compile and run time and the digest.
``--together`` compiles each searcher's programs as ``scripts.train`` does, all at once in a pool of threads
(``nas.engine.program_cache``), and reports that compile's CPU and wall seconds instead of the phases.

Every program the run compiles (the init program and each distinct chunk program) is traced, lowered
and compiled ahead by this script, each phase timed in CPU seconds of the process (``time.process_time``:
on a shared machine wall time depends on the other jobs; the wall seconds are printed beside). Per
program: its traced size (equations of the jaxpr, nested bodies included) and the three phases; per
searcher: the number of programs, the totals, the XLA compilations the process made in all (JAX's
monitoring events; small helper programs outside the run, e.g. the key split, count there), the run's
time (CPU and wall, compile excluded), the peak resident memory and a digest of the run's history (sha256
of its arrays: equal digests, equal numbers, bit for bit). ``--json`` writes every figure.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

from absl import flags

from nas.experiment import cli

_SEARCHERS = flags.DEFINE_list("searchers", [], "Registered searchers (default: every one).")
_SEEDS = flags.DEFINE_integer("seeds", 20, "Seeds (trials) of each run.")
_QUERIES = flags.DEFINE_integer("max_queries", 0, "Query budget (0: the searcher's default run's: 150, MF 100).")
_BENCH = flags.DEFINE_list("benchmarks", ["nb201/cifar10"], "Benchmark registry names, or byo24 / grid36.")
_FIDELITY = flags.DEFINE_string(
    "fidelity_data", "../shared/data/nb201/mini_nb201_12epoch.pd", "NB201 12-epoch table (used where it exists)."
)
_CPU_DEVICES = flags.DEFINE_integer("cpu_devices", 0, "CPU devices to split the seeds over (0 = one per core).")
_JSON = flags.DEFINE_string("json", "", "Write every figure to this JSON file.")
_TIMEOUT = flags.DEFINE_integer("timeout", 3600, "Seconds per searcher before its child process is stopped.")
_XLA = flags.DEFINE_list(
    "xla_options", [], "name=value XLA options for every searcher's chunk programs, in place of its own (to compare)."
)
_TOGETHER = flags.DEFINE_bool(
    "together", False, "Compile each searcher's programs as a run does (together, in threads): wall time, not phases."
)
_CHILD = flags.DEFINE_string("child", "", "internal: measure one searcher in this process")

# options of each searcher's default run beyond its defaults (module docstring)
DESIGN = "3,3,4,1,3,1;0,1,2,3,4,0;4,4,4,4,4,4;1,1,1,1,1,1"
RUN_OPTIONS = {"warm_start": {"design": DESIGN, "num_design": 4}, "asha": {"workers": 4}, "mo_asha": {"workers": 4}}
MF_QUERIES = 100  # configs/multifidelity.py


def jaxpr_size(jaxpr) -> int:
    """Equations of a (closed) jaxpr, those of nested jaxprs (scan, while, cond bodies, ...) included."""
    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
    n = 0
    for eqn in jaxpr.eqns:
        n += 1
        for value in eqn.params.values():
            for sub in value if isinstance(value, (list, tuple)) else (value,):
                if hasattr(sub, "eqns") or hasattr(getattr(sub, "jaxpr", None), "eqns"):
                    n += jaxpr_size(sub)
    return n


class Phases:
    """Traces, lowers and compiles programs ahead of their calls, timing each phase (CPU and wall seconds)."""

    def __init__(self):
        self.programs: list[dict] = []

    def compile(self, program, args, label: str) -> None:
        row = {"program": label}
        t, c = time.perf_counter(), time.process_time()
        traced = program.trace(*args)
        row["eqns"] = jaxpr_size(traced.jaxpr)
        row["trace_cpu"], row["trace_wall"] = time.process_time() - c, time.perf_counter() - t
        t, c = time.perf_counter(), time.process_time()
        lowered = traced.lower()
        row["lower_cpu"], row["lower_wall"] = time.process_time() - c, time.perf_counter() - t
        t, c = time.perf_counter(), time.process_time()
        lowered.compile()
        row["compile_cpu"], row["compile_wall"] = time.process_time() - c, time.perf_counter() - t
        self.programs.append(row)

    def cpu(self) -> float:
        return sum(p["trace_cpu"] + p["lower_cpu"] + p["compile_cpu"] for p in self.programs)


def history_digest(history) -> str:
    """sha256 of every array of a run's history (equal digests: the same numbers, bit for bit)."""
    import jax
    import numpy as np

    from nas.engine.devices import gather_seeds

    h = hashlib.sha256()
    for leaf in jax.tree.leaves(gather_seeds(history)):
        a = np.ascontiguousarray(leaf)
        h.update(f"{a.dtype}{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


def load_benchmark(name: str):
    """A registered benchmark (NB201 with its 12-epoch fidelity where the file exists) or a table of
    ``scripts.bench.bench_small_table``."""
    from scripts.bench.small_tables import SMALL_TABLES, table
    from spaces.benchmarks.registry import make_benchmark

    if name in SMALL_TABLES:
        return table(name)
    extra = {"fidelity_data": _FIDELITY.value} if _FIDELITY.value and os.path.exists(_FIDELITY.value) else {}
    return make_benchmark(name, **(extra if name.startswith("nb201/") else {}))


def option_value(text: str):
    """An XLA option's value from the command line: an int, a float, true/false, or the text."""
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text.lower(), text)


def run_metrics(name: str, bench_name: str) -> tuple[str, ...]:
    """The metrics a run of ``name`` records: a multi-objective searcher's (configs/multiobjective.py's metric of
    the table's family), none for the others."""
    from configs.multiobjective import DEFAULT_METRIC
    from nas.host.objectives import is_multi_objective

    return (DEFAULT_METRIC[bench_name.split("/")[0]],) if is_multi_objective(name) else ()


def run_options(name: str, bench) -> dict:
    from configs.multiobjective import MULTI_OBJECTIVE
    from nas.searchers import searcher_class

    mo = {k: v for k, v in MULTI_OBJECTIVE.get(name, {}).items() if k != "name"}  # that config's settings
    opts = {**mo, **RUN_OPTIONS.get(name, {})}
    mf = getattr(searcher_class(name), "multi_fidelity", False)
    opts["max_queries"] = _QUERIES.value or (MF_QUERIES if mf else 150)
    if mf:
        opts["fidelities"] = tuple(bench.fidelities)
    return opts


def measure(name: str, bench_name: str) -> dict:
    """One searcher's default run in this (fresh) process: every program compiled ahead and timed, then run."""
    import jax

    from nas.engine.devices import enable_compilation_cache, use_cpu_cores

    use_cpu_cores(_CPU_DEVICES.value)  # before any JAX computation, as scripts.train
    cache = tempfile.mkdtemp(prefix="bench_compile_cache_")
    atexit.register(shutil.rmtree, cache, ignore_errors=True)  # the empty cache this process filled
    enable_compilation_cache(cache)
    from nas.engine import chunked_loop, compile_policy, program_cache
    from nas.searchers import make_searcher
    from scripts.bench.compile_stats import CompileStats

    bench = load_benchmark(bench_name)
    opts = run_options(name, bench)
    searcher = make_searcher(name, bench.space, **opts)
    metrics = run_metrics(name, bench_name)
    if _XLA.value:  # the chunk programs' options (chunked_loop: the init program then compiles at level 0)
        xla = {k: option_value(v) for k, v in (o.split("=", 1) for o in _XLA.value)}
        compile_policy.compiler_options = lambda _searcher: dict(xla)
    keys = jax.random.split(jax.random.PRNGKey(0), _SEEDS.value)
    phases, stats = Phases(), CompileStats()

    def label(program) -> str:
        key = next(k for k, v in program_cache._PROGRAMS.items() if v is program)
        what = key[1]
        while isinstance(what, tuple):  # ("init", sharding), and (that, metrics) where a run records metrics
            what = what[0]
        variant = f" variant {key[0].variant}" if key[0].variant is not None else ""
        return f"{what} {key[2]}{variant}".strip()

    def compile_ahead(programs, label_, notice):  # program_cache.compile_ahead one at a time, each phase timed
        del label_, notice
        for program, args in programs:
            key = program_cache._signature(program, args)
            if key not in program_cache._COMPILED:
                phases.compile(program, args, label(program))
                program_cache._COMPILED.add(key)

    c0, t0, n0 = time.process_time(), time.perf_counter(), stats.snapshot()
    if _TOGETHER.value:  # as a run compiles: every program at once, in threads (nas.engine.program_cache)
        before = len(program_cache._COMPILED)
        chunked_loop.compile_runs({name: (searcher, bench)}, keys, metrics=metrics, notice=False)
        count = len(program_cache._COMPILED) - before
        phases.programs.append({
            "program": f"{count} programs together", "count": count, "eqns": 0,
            "trace_cpu": 0.0, "lower_cpu": 0.0, "compile_cpu": time.process_time() - c0,
            "trace_wall": 0.0, "lower_wall": 0.0, "compile_wall": time.perf_counter() - t0,
        })  # fmt: skip
    else:
        chunked_loop.compile_ahead = compile_ahead  # a fresh run compiles its init and chunk programs through it
    h = chunked_loop.run_chunked(searcher, bench, keys, progress=False, metrics=metrics)
    jax.block_until_ready(h.score)
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    count, secs, hits = (a - b for a, b in zip(stats.snapshot(), n0))
    compile_cpu = phases.cpu()
    compile_wall = sum(p["trace_wall"] + p["lower_wall"] + p["compile_wall"] for p in phases.programs)
    return {
        "searcher": name, "benchmark": bench_name, "seeds": _SEEDS.value, "digest": history_digest(h),
        "options": {k: v for k, v in opts.items() if k != "fidelities"}, "metrics": list(metrics),
        "programs": phases.programs, "num_programs": sum(p.get("count", 1) for p in phases.programs),
        "eqns": sum(p["eqns"] for p in phases.programs),
        "trace_cpu": sum(p["trace_cpu"] for p in phases.programs),
        "lower_cpu": sum(p["lower_cpu"] for p in phases.programs),
        "xla_cpu": sum(p["compile_cpu"] for p in phases.programs),
        "compile_cpu": compile_cpu, "compile_wall": compile_wall,
        "run_cpu": cpu - compile_cpu, "run_wall": wall - compile_wall,
        "xla_compilations": count, "xla_compile_event_s": secs, "cache_hits": hits,
        "devices": len(getattr(getattr(h.score, "sharding", None), "device_set", [0])),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "xla_flags": os.environ.get("XLA_FLAGS", ""), "xla_options": _XLA.value,
    }  # fmt: skip


def row_line(r: dict) -> str:
    return (
        f"| {r['searcher']} | {r['benchmark']} | {r['num_programs']} | {r['eqns']:,} | {r['trace_cpu']:.2f} | "
        f"{r['lower_cpu']:.2f} | {r['xla_cpu']:.2f} | **{r['compile_cpu']:.2f}** ({r['compile_wall']:.1f}) | "
        f"{r['xla_compilations']} | {r['run_cpu']:.2f} ({r['run_wall']:.2f}) | {r['peak_rss_mb']:.0f} | {r['digest']} |"
    )


def child_argv(name: str, bench_name: str) -> list[str]:
    return [sys.executable, "-m", "scripts.bench.bench_compile", f"--child={name}", f"--seeds={_SEEDS.value}",
            f"--max_queries={_QUERIES.value}", f"--benchmarks={bench_name}", f"--fidelity_data={_FIDELITY.value}",
            f"--cpu_devices={_CPU_DEVICES.value}", f"--xla_options={','.join(_XLA.value)}",
            f"--together={_TOGETHER.value}"]  # fmt: skip


def main(argv):
    if len(argv) > 1:
        raise cli.ConfigError(f"unexpected arguments {argv[1:]}")
    if _CHILD.value:
        print("RESULT " + json.dumps(measure(_CHILD.value, _BENCH.value[0])), flush=True)
        return 0
    from nas.host.objectives import is_multi_objective
    from nas.searchers import available_searchers, searcher_class
    from scripts.bench.small_tables import SMALL_TABLES

    names = _SEARCHERS.value or available_searchers(multi_fidelity=None)
    env = dict(os.environ)
    env.pop("JAX_COMPILATION_CACHE_DIR", None)  # the child uses its own empty cache
    env.pop("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", None)  # scripts.train's threshold (0.05 s)
    print(f"{_SEEDS.value} seeds per searcher on {','.join(_BENCH.value)}, one child process each, empty "
          f"compilation cache; load {os.getloadavg()[0]:.1f}; XLA_FLAGS={env.get('XLA_FLAGS', '')!r}",
          flush=True)  # fmt: skip
    rows, failed = [], []
    for name in names:
        for bench_name in _BENCH.value:
            mf = getattr(searcher_class(name), "multi_fidelity", False)
            if mf and bench_name in SMALL_TABLES:
                print(f"{name} on {bench_name}: skipped (a multi-fidelity searcher, a table without fidelities)")
                continue
            if is_multi_objective(name) and bench_name in SMALL_TABLES:
                print(f"{name} on {bench_name}: skipped (a multi-objective searcher, a table without metrics)")
                continue
            load = os.getloadavg()[0]
            try:
                p = subprocess.run(child_argv(name, bench_name), env=env, capture_output=True, text=True,
                                   timeout=_TIMEOUT.value)  # fmt: skip
            except subprocess.TimeoutExpired:
                print(f"{name} on {bench_name}: stopped after {_TIMEOUT.value} s", flush=True)
                failed.append(name)
                continue
            found = [line for line in p.stdout.splitlines() if line.startswith("RESULT ")]
            if p.returncode != 0 or not found:
                print(f"{name} on {bench_name}: failed ({p.returncode}): {p.stderr.strip()[-2000:]}", flush=True)
                failed.append(name)
                continue
            r = json.loads(found[-1][len("RESULT ") :])
            r["load"] = load
            rows.append(r)
            for prog in r["programs"]:
                print(f"  {name} {prog['program']}: {prog['eqns']:,} eqns, trace {prog['trace_cpu']:.2f} / lower "
                      f"{prog['lower_cpu']:.2f} / XLA {prog['compile_cpu']:.2f} s CPU", flush=True)  # fmt: skip
            print(f"{name} on {bench_name}: {r['num_programs']} programs, compile {r['compile_cpu']:.2f} s CPU "
                  f"({r['compile_wall']:.1f} s wall), run {r['run_cpu']:.2f} s CPU ({r['run_wall']:.2f} s wall), "
                  f"{r['xla_compilations']} XLA compilations in the process, digest {r['digest']}, load {load:.1f}",
                  flush=True)  # fmt: skip
    print(
        "\n| searcher | table | programs | jaxpr eqns | trace | lower | XLA | compile, CPU (wall) | XLA compilations "
        "| run, CPU (wall) | peak RSS (MB) | history digest |\n|---|---|---|---|---|---|---|---|---|---|---|---|"
    )
    for r in rows:
        print(row_line(r))
    if _JSON.value:
        with open(cli.output_file(_JSON.value, "json"), "w") as f:
            json.dump({"rows": rows, "seeds": _SEEDS.value, "benchmarks": _BENCH.value}, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    cli.run(main)
