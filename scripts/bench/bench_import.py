"""What ``import nas`` costs, side by side with ``import jax`` alone, each in fresh processes.

    python -m scripts.bench.bench_import --runs=7
    python -m scripts.bench.bench_import --runs=7 --json=/tmp/bench_import.json

Per statement, ``--runs`` fresh ``python -c`` processes; the figure is the time the import statements
take inside the process (``time.perf_counter`` around them: interpreter start-up is the same for every
row and left out), median and range, and how many modules the process then holds. Rows: ``import jax``;
``import nas`` (the front door: its names resolve when first used); ``import nas`` + ``nas.Study`` (the
tuner's modules, what a study's first line costs); ``import nas`` + ``nas.make_search`` (the engine).
The front door's goal: ``import nas`` at most 1 s more than ``import jax``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

from absl import flags

from nas.experiment import cli
from nas.experiment.config_fields import ConfigError

ROWS = {
    "import jax": "import jax",
    "import nas": "import nas",
    "import nas; nas.Study": "import nas; nas.Study",
    "import nas; nas.make_search": "import nas; nas.make_search",
}
PROBE = "import sys, time; t = time.perf_counter(); {stmt}; print(time.perf_counter() - t, len(sys.modules))"

_RUNS = flags.DEFINE_integer("runs", 5, "fresh processes per statement")
_JSON = flags.DEFINE_string("json", "", "also write the figures here (JSON)")


def time_statement(stmt: str, runs: int) -> dict:
    seconds, modules = [], 0
    for _ in range(runs):
        env = {**os.environ, "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu")}
        out = subprocess.run([sys.executable, "-c", PROBE.format(stmt=stmt)], capture_output=True, text=True,
                             check=True, env=env)  # fmt: skip
        s, m = out.stdout.split()
        seconds.append(float(s))
        modules = int(m)
    return {"median_s": statistics.median(seconds), "min_s": min(seconds), "max_s": max(seconds), "modules": modules}


def main(argv) -> None:
    del argv
    if _RUNS.value < 1:
        raise ConfigError(f"--runs={_RUNS.value}: give at least 1 (fresh processes per statement)")
    rows = {label: time_statement(stmt, _RUNS.value) for label, stmt in ROWS.items()}
    print(f"| statement ({_RUNS.value} fresh processes each) | median s | range s | modules loaded |")
    print("|---|---|---|---|")
    for label, r in rows.items():
        print(f"| `{label}` | {r['median_s']:.3f} | {r['min_s']:.3f}-{r['max_s']:.3f} | {r['modules']} |")
    jax_s = rows["import jax"]["median_s"]
    for label in ("import nas", "import nas; nas.Study"):  # the goal: at most 1 s more than import jax
        print(f"`{label}` minus `import jax`: {rows[label]['median_s'] - jax_s:+.3f} s (goal: at most +1 s)")
    if _JSON.value:
        with open(cli.output_file(_JSON.value, "json", "bench_import.json"), "w") as f:
            json.dump({"runs": _RUNS.value, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    cli.run(main)
