"""Speed of the policy-gradient searchers (and of AlphaX): many seeds of a whole search in one compiled call.

    python -m scripts.bench.bench_policies                      # ReMAADE and ReACTS, 500 seeds x 150 queries
    python -m scripts.bench.bench_policies --searchers=remaade --seeds=100
    python -m scripts.bench.bench_policies --searchers=alphax --seeds=100
    python -m scripts.bench.bench_policies --searchers=reacts --reacts_kwargs='{"sim_epochs": 50}'

Each searcher runs in its own child process (so its peak resident memory is its own):
``jax.jit(jax.vmap(run))`` over the seeds on NAS-Bench-201 cifar10 is lowered and compiled
first (compile time), then executed once (wall time, the figure to compare with the aims:
ReMAADE < 30 s, ReACTS < 3 min for 500 seeds on 2 CPU cores) and the CPU time it used (on a
shared machine wall time is inflated by other processes; CPU time / cores is the wall time the
run would take with the cores to itself). Prints one line per searcher.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time

from absl import flags

from nas.experiment import cli

_SEARCHERS = flags.DEFINE_list("searchers", ["remaade", "reacts"], "searchers to time")
_SEEDS = flags.DEFINE_integer("seeds", 500, "seeds (trials), vmapped")
_QUERIES = flags.DEFINE_integer("queries", 150, "query budget per seed")
_BENCH = flags.DEFINE_string("benchmark", "nb201/cifar10", "benchmark name")
_REMAADE = flags.DEFINE_string("remaade_kwargs", "{}", "JSON kwargs for remaade")
_REACTS = flags.DEFINE_string("reacts_kwargs", "{}", "JSON kwargs for reacts")
_CPU_DEVICES = flags.DEFINE_integer("cpu_devices", 0, "CPU devices to split the seeds over (0 = one per core)")
_CHILD = flags.DEFINE_string("child", "", "internal: run one searcher in this process")


def run_one(name: str, kwargs: dict) -> dict:
    from nas.engine.devices import use_cpu_cores

    use_cpu_cores(_CPU_DEVICES.value)  # before any JAX computation
    from spaces.benchmarks.registry import make_benchmark

    return {**time_search(name, make_benchmark(_BENCH.value), _SEEDS.value, _QUERIES.value, kwargs), "kwargs": kwargs}


def time_search(name: str, bench, seeds: int, queries: int, options: dict) -> dict:
    """``seeds`` seeds of searcher ``name`` (``options``) on ``bench`` in one compiled call, seeds split over the
    devices: compile and run seconds (run: wall and CPU of this process), the mean final best validation score,
    this process's peak resident memory and, where the device reports it, the device's peak memory. A
    multi-fidelity searcher runs on ``bench``'s fidelities (``nas.engine.multi_fidelity_runner``)."""
    import jax
    import numpy as np

    from nas.core.multi_fidelity import is_multi_fidelity
    from nas.engine.compile_policy import compiler_options
    from nas.engine.compiler_memory import trim_after_compiles
    from nas.engine.devices import shard_keys
    from nas.engine.incumbent import incumbent_curve, top_fidelity_score
    from nas.engine.multi_fidelity_runner import make_mf_search
    from nas.engine.runner import make_search
    from nas.searchers import make_searcher, searcher_class

    trim_after_compiles()  # as the chunked loop does
    if getattr(searcher_class(name), "multi_fidelity", False):
        options = {"fidelities": tuple(bench.fidelities), **options}
    s = make_searcher(name, bench.space, max_queries=queries, **options)
    mf = is_multi_fidelity(s)
    keys = shard_keys(s, jax.random.split(jax.random.PRNGKey(0), seeds))
    run = make_mf_search(s) if mf else make_search(s)
    fn = jax.jit(jax.vmap(run, in_axes=(0, None)), compiler_options=compiler_options(s))
    t0 = time.perf_counter()
    compiled = fn.lower(keys, bench).compile()
    compile_s = time.perf_counter() - t0
    t0, c0 = time.perf_counter(), time.process_time()
    hist = jax.block_until_ready(compiled(keys, bench))
    run_s, cpu_s = time.perf_counter() - t0, time.process_time() - c0
    score = np.asarray(hist.score)
    if mf:  # the incumbent is the best evaluation at the top fidelity
        score = top_fidelity_score(score, np.asarray(hist.fidelity), s.num_fidelities)
    best, _ = incumbent_curve(score, np.asarray(hist.report_score))
    stats = jax.devices()[0].memory_stats() or {}
    return {
        "searcher": name,
        "seeds": seeds,
        "queries": queries,
        "compile_s": round(compile_s, 2),
        "run_s": round(run_s, 4),
        "run_cpu_s": round(cpu_s, 4),
        "final_best_valid": round(float(np.mean(np.asarray(best[:, -1]))), 3),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 0),
        "device_peak_mb": round(stats["peak_bytes_in_use"] / 2**20) if "peak_bytes_in_use" in stats else None,
    }


def main(argv):
    del argv
    kwargs = {"remaade": json.loads(_REMAADE.value), "reacts": json.loads(_REACTS.value)}
    if _CHILD.value:
        print("RESULT " + json.dumps(run_one(_CHILD.value, kwargs.get(_CHILD.value, {}))), flush=True)
        return 0
    print(f"{os.cpu_count()} CPU cores visible; load average {os.getloadavg()[0]:.1f} (shared machines inflate times)")
    for name in _SEARCHERS.value:
        cmd = [sys.executable, "-m", "scripts.bench.bench_policies", f"--child={name}"] + [
            a for a in sys.argv[1:] if not a.startswith("--searchers")
        ]
        out = subprocess.run(cmd, capture_output=True, text=True, check=False)
        lines = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")]
        if out.returncode != 0 or not lines:
            print(f"{name}: failed\n{out.stderr[-2000:]}")
            continue
        r = json.loads(lines[-1][len("RESULT ") :])
        print(
            f"{name:8s} {r['seeds']} seeds x {r['queries']} queries: compile {r['compile_s']:.1f} s, "
            f"run {r['run_s']:.1f} s (CPU time {r.get('run_cpu_s', float('nan')):.1f} s), "
            f"peak RSS {r['peak_rss_mb']:.0f} MB, "
            f"mean best validation {r['final_best_valid']:.3f}  kwargs={r['kwargs']}"
        )
    return 0


if __name__ == "__main__":
    cli.run(main)
