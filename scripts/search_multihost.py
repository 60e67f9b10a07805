"""Many seeds of one searcher on every device of one host or of many hosts, in one compiled call.

The seed axis is the mesh axis ``"seeds"`` (``nas.engine.devices.seed_mesh``): each device runs its
share of the seeds, nothing crosses devices, and the numbers equal a one-device run. The same
command runs on one CPU, the GPUs of a host, or every host of a cluster (docs/reference/scaling.md)::

    # one host: all its devices (CPU cores: --cpu_devices; GPUs and TPU chips: all of them)
    python -m scripts.search_multihost --searcher=regularized_evolution --benchmark=nb201/cifar10 \
        --num_seeds=512 --max_queries=150 --option=population_size=30 --option=tournament_size=10 \
        --out=/tmp/re.npz

    # many hosts: the same command on every host, with --distributed (a TPU pod, SLURM and
    # Open MPI are detected; elsewhere set JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES, JAX_PROCESS_ID)
    JAX_COORDINATOR_ADDRESS=host0:8476 JAX_NUM_PROCESSES=2 JAX_PROCESS_ID=0 \
        python -m scripts.search_multihost --distributed --searcher=random_search --num_seeds=512 --out=/tmp/rs.npz

``--num_seeds`` must be a multiple of the number of devices across hosts. Process 0 writes
``--out`` (the ``History`` arrays ``tokens``, ``score``, ``report_score``, ``cost``,
``[num_seeds, max_queries]``) and prints the time and the final incumbent. No checkpoints: for
resumable single-host runs use ``scripts.train``.
"""

from __future__ import annotations

import ast
import time

import jax
import numpy as np
from absl import app, flags

from nas.experiment import cli

_SEARCHER = flags.DEFINE_string("searcher", "random_search", "Registered searcher.")
_OPTIONS = flags.DEFINE_multi_string("option", [], "A searcher option name=value (repeat the flag).")
_BENCH = flags.DEFINE_string("benchmark", "nb201/cifar10", "Benchmark registry name.")
_SEEDS = flags.DEFINE_integer("num_seeds", 512, "Seeds (a multiple of the devices across hosts).")
_QUERIES = flags.DEFINE_integer("max_queries", 150, "Queries per seed.")
_SEED = flags.DEFINE_integer("seed", 0, "Seeds are jax.random.split(PRNGKey(seed), num_seeds).")
_DISTRIBUTED = flags.DEFINE_bool(
    "distributed", False, "Join a multi-process run (nas.engine.devices.initialize_distributed)."
)
_CPU_DEVICES = flags.DEFINE_integer("cpu_devices", 0, "CPU devices when running on the CPU (0 = one per core).")
_OUT = flags.DEFINE_string("out", "", "Write the histories here (.npz, process 0); '' = do not write.")


def parse_options(items: list[str]) -> dict:
    """``["population_size=30", "mutation='edge'"]`` as a dict (values as Python literals, else strings)."""
    out = {}
    for item in items:
        name, sep, text = item.partition("=")
        if not sep or not name:
            raise app.UsageError(f"--option={item!r}: write name=value")
        try:
            out[name] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            out[name] = text
    return out


def main(argv):
    del argv
    from nas.engine.devices import gather_seeds, initialize_distributed, shard_keys, use_cpu_cores

    use_cpu_cores(_CPU_DEVICES.value)  # before any JAX computation (the CPU backend only)
    if _DISTRIBUTED.value:
        initialize_distributed()
    from nas.engine.budget import Budget, BudgetError, check_budget
    from nas.engine.runner import make_search
    from nas.searchers import make_searcher
    from spaces.benchmarks.registry import make_benchmark
    from spaces.files import savez_atomic

    out = cli.output_file(_OUT.value, "out", "histories.npz") if _OUT.value else ""
    options = parse_options(_OPTIONS.value)
    try:  # a name, option or budget the library refuses: one line naming the flag's value
        bench = make_benchmark(_BENCH.value)
        searcher = make_searcher(_SEARCHER.value, bench.space, max_queries=_QUERIES.value, **options)
        names = {"num_trials": "--num_seeds", "max_queries": "--max_queries", "seed": "--seed"}
        check_budget(Budget(_QUERIES.value, searcher.batch_size, _SEEDS.value, _SEED.value, names=names,
                            option_prefix="--option="), bench.space, searcher)  # fmt: skip
    except cli.DataError:
        raise
    except (BudgetError, TypeError, ValueError) as e:
        raise cli.ConfigError(str(e)) from e
    keys = shard_keys(searcher, jax.random.split(jax.random.PRNGKey(_SEED.value), _SEEDS.value))
    run = jax.jit(jax.vmap(make_search(searcher), in_axes=(0, None)))
    t0 = time.perf_counter()
    compiled = run.lower(keys, bench).compile()
    t1 = time.perf_counter()
    history = jax.block_until_ready(compiled(keys, bench))
    t2 = time.perf_counter()
    h = gather_seeds({k: getattr(history, k) for k in ("tokens", "score", "report_score", "cost")})
    if jax.process_index() == 0:
        devices = len(keys.sharding.device_set) if hasattr(keys, "sharding") else 1
        best = np.max(h["score"], axis=1)
        print(
            f"{_SEARCHER.value} on {_BENCH.value}: {_SEEDS.value} seeds x {_QUERIES.value} queries on {devices} "
            f"device(s) of {jax.process_count()} process(es) ({jax.devices()[0].platform}); compile {t1 - t0:.1f} s, "
            f"run {t2 - t1:.2f} s ({_SEEDS.value / (t2 - t1):.0f} seeds/s); final incumbent validation score "
            f"{best.mean():.4f} +- {best.std():.4f} (mean +- std over seeds)"
        )
        if out:
            savez_atomic(out, {k: np.asarray(v) for k, v in h.items()})
            print(f"histories in {out}")


if __name__ == "__main__":
    cli.run(main)
