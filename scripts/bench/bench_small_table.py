"""Compile cost of a small table of your own against a built-in table (docs/tutorials/extending.md, "Bring your own").

    python -m scripts.bench.bench_small_table [--searchers=random_search,regularized_evolution,local_search]
    python -m scripts.bench.bench_small_table --repo=../main   # the same measurement of another checkout

The table is docs/tutorials/extending.md's ``my/mlp`` with all of its 24 configurations (two commuting layer widths,
``canonical=``: 36 strings, 24 networks; seeded made-up scores, since only the programs matter here), beside
the same space without ``canonical=`` (a plain 36-string grid) and HPOLib naval (62,208 rows). Each
(searcher, table) runs in a new process with an empty compilation cache at XLA's default level: 100 seeds
x 20 queries through the chunked loop (``nas.engine.chunked_loop.run_chunked``). Printed: the XLA programs
compiled, their compile time (wall, from JAX's monitoring events) and the process CPU seconds of the run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

from absl import flags

from nas.experiment import cli
from scripts.bench.small_tables import table

_SEARCHERS = flags.DEFINE_list("searchers", ["random_search", "regularized_evolution", "local_search"], "searchers")
_CHILD = flags.DEFINE_string("child", "", "internal: searcher,table to run in this process")
_REPO = flags.DEFINE_string("repo", "", "Checkout whose code runs (default: this one).")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TABLES = ("byo24", "grid36", "hpolib/naval_propulsion")


def child(searcher_name: str, table_name: str) -> dict:
    import time

    import jax

    from nas.engine.chunked_loop import run_chunked
    from nas.searchers import make_searcher
    from scripts.bench.compile_stats import CompileStats

    stats = CompileStats()
    bench = table(table_name)
    searcher = make_searcher(searcher_name, bench.space, max_queries=20)
    keys = jax.random.split(jax.random.PRNGKey(0), 100)
    cpu = time.process_time()
    run_chunked(searcher, bench, keys, progress=False)
    count, seconds, _ = stats.snapshot()
    return {"programs": count, "compile_s": seconds, "cpu_s": time.process_time() - cpu}


def main(argv):
    if len(argv) > 1:
        raise cli.ConfigError(f"unexpected arguments {argv[1:]}")
    if _CHILD.value:
        print(json.dumps(child(*_CHILD.value.split(","))))
        return 0
    print("| searcher | table | programs | compile (s, wall) | run CPU (s) |\n|---|---|---|---|---|")
    for name in _SEARCHERS.value:
        for t in TABLES:
            repo = os.path.abspath(_REPO.value or ROOT)
            with tempfile.TemporaryDirectory() as cache:  # empty: every program compiles
                env = {**os.environ, "JAX_COMPILATION_CACHE_DIR": cache, "JAX_PLATFORMS": "cpu", "PYTHONPATH": repo}
                env.pop("XLA_FLAGS", None)
                done = subprocess.run([sys.executable, os.path.abspath(__file__), f"--child={name},{t}"],
                                      cwd=repo, env=env, capture_output=True, text=True, check=False)  # fmt: skip
            if done.returncode:
                raise RuntimeError(f"{name} on {t} failed:\n{done.stderr[-2000:]}")
            r = json.loads(done.stdout.strip().splitlines()[-1])
            print(f"| {name} | {t} | {r['programs']} | {r['compile_s']:.2f} | {r['cpu_s']:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    cli.run(main)
