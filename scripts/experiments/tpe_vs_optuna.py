"""The library's TPE (``nas.searchers.tpe``) against Optuna's ``TPESampler`` on the same tasks: quality and overhead.

Quality: HPOLib tables (``hpolib/naval_propulsion``, ``hpolib/parkinsons_telemonitoring``), ``--trials``
queries per run over ``--seeds`` seeds; each run's best validation MSE (the table's noisy per-seed values,
as Table III reads them). The library's TPE runs in the compiled loop (every seed at once, ``vmap``) with
``ordered_lists=True``, so both read a numeric list as ordinal over its index (the Optuna peer's mapping,
``nas.experiment.tpe_peer``); Optuna runs as that peer, one study per seed.

Overhead: a Study (``nas.create_study(space, "tpe")``) and an Optuna study with ``TPESampler`` on the same
declared space (a log float, an int, a log int, a categorical and a conditional float) and a trivial
objective, ``--overhead_trials`` trials per run over ``--overhead_seeds`` seeds; the median ask + tell per
trial after the first (the first compiles the library's programs; it is reported on its own, with the
persistent compilation cache as found). Writes ``results/tpe_vs_optuna.json``::

    python -m scripts.experiments.tpe_vs_optuna
"""

from __future__ import annotations

import datetime
import json
import math
import os
import platform
import time

import numpy as np
from absl import flags

from nas.experiment import cli

_SEEDS = flags.DEFINE_integer("seeds", 20, "Seeds per searcher and task (quality).")
_TRIALS = flags.DEFINE_integer("trials", 100, "Queries per run (quality).")
_TASKS = flags.DEFINE_list("tasks", ["hpolib/naval_propulsion", "hpolib/parkinsons_telemonitoring"], "Benchmarks.")
_OVERHEAD_TRIALS = flags.DEFINE_integer("overhead_trials", 200, "Trials per run (overhead).")
_OVERHEAD_SEEDS = flags.DEFINE_integer("overhead_seeds", 5, "Seeds (overhead).")
_OUT = flags.DEFINE_string("out", "results/tpe_vs_optuna.json", "The results file to write.")

UNITS = {"hpolib/naval_propulsion": 1e-5, "hpolib/parkinsons_telemonitoring": 1e-2}


def mean_se(xs, digits: int, n: int | None = None) -> dict:
    xs = np.asarray(xs, np.float64)
    cell = {"mean": round(float(xs.mean()), digits + 2), "spread": round(float(xs.std(ddof=1) / math.sqrt(len(xs))),
            digits + 2), "digits": digits}  # fmt: skip
    return {**cell, "n": n} if n is not None else cell


def best_mse(scores) -> np.ndarray:
    """f64[S]: exp(-max valid) per seed (valid = -log MSE)."""
    return np.exp(-np.max(np.asarray(scores, np.float64), axis=1))


def quality(task: str) -> tuple[np.ndarray, np.ndarray, float, float]:
    """(ours f64[S], Optuna's f64[S], our wall s, Optuna's wall s): best validation MSE per seed."""
    import jax

    from nas.engine.runner import make_search
    from nas.experiment.peers import make_peer, run_peer
    from nas.searchers import make_searcher
    from spaces.benchmarks.registry import make_benchmark

    bench = make_benchmark(task)
    keys = jax.random.split(jax.random.PRNGKey(0), _SEEDS.value)
    ours = make_searcher("tpe", bench.space, max_queries=_TRIALS.value, ordered_lists=True)
    t = time.perf_counter()
    hist = jax.jit(jax.vmap(make_search(ours), in_axes=(0, None)))(keys, bench)
    mine = best_mse(jax.device_get(hist.score))
    t_ours = time.perf_counter() - t
    peer = make_peer("tpe", bench.space, max_queries=_TRIALS.value)
    t = time.perf_counter()
    ph = run_peer(peer, bench, keys, progress=False)
    t_optuna = time.perf_counter() - t
    return mine, best_mse(np.asarray(ph.score)), t_ours, t_optuna


def overhead_space():
    from spaces.params import Float, Int

    return {"lr": Float(1e-5, 1e-1, log=True), "layers": Int(1, 8), "width": Int(16, 1024, log=True),
            "opt": ["sgd", "adam"], "momentum": Float(0.0, 0.99, when={"opt": ["sgd"]})}  # fmt: skip


def toy(p) -> float:
    return (math.log10(p["lr"]) + 3) ** 2 + 0.1 * abs(p["layers"] - 4) + 0.1 * abs(math.log2(p["width"]) - 7)


def overhead_ours(seed: int) -> tuple[float, float, float]:
    """(first ask + tell s, median ask + tell s after it, best value)."""
    import nas

    study = nas.create_study(overhead_space(), "tpe", direction="minimize", seed=seed,
                             max_trials=_OVERHEAD_TRIALS.value)  # fmt: skip
    times = []
    for _ in range(_OVERHEAD_TRIALS.value):
        t = time.perf_counter()
        trial = study.ask()
        value = toy(trial.params)
        study.tell(trial, value)
        times.append(time.perf_counter() - t)
    return times[0], float(np.median(times[1:])), study.best_value


def overhead_optuna(seed: int) -> tuple[float, float, float]:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="minimize", sampler=optuna.samplers.TPESampler(seed=seed))
    times = []
    for _ in range(_OVERHEAD_TRIALS.value):
        t = time.perf_counter()
        trial = study.ask()
        p = {"lr": trial.suggest_float("lr", 1e-5, 1e-1, log=True), "layers": trial.suggest_int("layers", 1, 8),
             "width": trial.suggest_int("width", 16, 1024, log=True),
             "opt": trial.suggest_categorical("opt", ["sgd", "adam"])}  # fmt: skip
        if p["opt"] == "sgd":
            p["momentum"] = trial.suggest_float("momentum", 0.0, 0.99)
        study.tell(trial, toy(p))
        times.append(time.perf_counter() - t)
    return times[0], float(np.median(times[1:])), study.best_value


def versions() -> dict:
    import jax
    import optuna

    return {"python": platform.python_version(), "jax": jax.__version__, "optuna": optuna.__version__}


def main(argv):
    del argv
    rows, wall = [], {}
    for task in _TASKS.value:
        mine, theirs, t_ours, t_optuna = quality(task)
        unit = UNITS.get(task, 1.0)
        label = f"{task} (x{unit:g})"
        rows.append([label, mean_se(mine / unit, 3), mean_se(theirs / unit, 3)])
        wall[task] = (t_ours, t_optuna)
        print(task, rows[-1], f"wall {t_ours:.1f} s / {t_optuna:.1f} s", flush=True)
    over = {"ours": [overhead_ours(s) for s in range(_OVERHEAD_SEEDS.value)],
            "optuna": [overhead_optuna(s) for s in range(_OVERHEAD_SEEDS.value)]}  # fmt: skip
    for k, v in over.items():
        print(k, v, flush=True)
    write(rows, np.asarray(over["ours"]), np.asarray(over["optuna"]))
    print("wrote", _OUT.value, {k: [round(x, 1) for x in v] for k, v in wall.items()})


def overhead_rows(o: np.ndarray, p: np.ndarray) -> list:
    """The overhead table from (first s, median s, best value) per run, ours ``o`` and Optuna's ``p`` (the
    table's ``trials`` are the runs; the first ask is one run's)."""
    return [
        ["median ask + tell per trial (ms)", mean_se(o[:, 1] * 1e3, 2), mean_se(p[:, 1] * 1e3, 2)],
        ["first ask + tell, after the imports (s)", {"mean": round(float(o[0, 0]), 3), "digits": 2, "n": 1},
         {"mean": round(float(p[0, 0]), 4), "digits": 3, "n": 1}],
        ["best toy value after the run (x1e-3)", mean_se(o[:, 2] * 1e3, 2), mean_se(p[:, 2] * 1e3, 2)],
    ]  # fmt: skip


def write(rows: list, o: np.ndarray, p: np.ndarray) -> None:
    today = datetime.date.today().isoformat()
    data = {
        "title": "The library's TPE against Optuna's TPESampler",
        "run": {
            "command": "python -m scripts.experiments.tpe_vs_optuna",
            "protocol": "mean",
            "seed": list(range(_SEEDS.value)),
            "trials": _SEEDS.value,
            "machine": f"{os.cpu_count()}-core {platform.machine()} CPU, shared with other jobs",
            "date": today,
            "versions": versions(),
            "source": f"run {today}",
        },
        "tables": {
            "quality": {
                "caption": f"Best validation MSE after {_TRIALS.value} queries (lower is better); both read a "
                           "numeric list as ordinal over its index.",
                "spread": "se",
                "columns": ["task", "tpe (nasjax)", "TPESampler (Optuna)"],
                "rows": rows,
            },
            "overhead": {
                "caption": f"One declared space (log float, int, log int, categorical, conditional float), a "
                           f"trivial objective, {_OVERHEAD_TRIALS.value} trials per run, {len(o)} runs; the first "
                           "trial compiles the library's programs (persistent cache as found). Fresh processes: "
                           "scripts.bench.bench_tuner.",
                "spread": "se",
                "trials": len(o),
                "seed": list(range(len(o))),
                "columns": ["measure", "tpe (nasjax)", "TPESampler (Optuna)"],
                "rows": overhead_rows(o, p),
            },
        },
    }
    with open(_OUT.value, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    cli.run(main)
