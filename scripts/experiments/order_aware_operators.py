"""Does order-aware mutation help on a continuous hyperparameter space? Real MLP training, paired seeds.

The MLP objective of docs/research/hpo.md (``mlp/diabetes``: scikit-learn's bundled data, no download; or
``--dataset=boston|naval``, the UCI folders) on a space with continuous ranges carried as grids
(``spaces.params``' default resolution, or ``--num`` points): learning rate (log, 1e-5 .. 1), L2
penalty alpha (log, 1e-7 .. 1e-1), SGD momentum (0 .. 0.99) and Adam's beta_1 (0.5 .. 0.999), plus
activation, solver, width and batch size. Each searcher runs twice on the same seeds: once with the
plain categorical operators (``HPOSpace(order_aware=False)``: a mutation draws any other grid value,
the neighbourhood is every other value) and once order-aware (``spaces.ordinal``: a Gaussian step of
sigma 0.2 on the unit axis, adjacent values and a doubling ladder). The two runs of a seed draw the
same random start (the spaces differ only in their operators), so the differences are paired. Prints,
per searcher, the mean validation RMSE (what the searchers minimize) and test RMSE of the incumbent
(the configuration with the best validation RMSE so far) after 25 %, 50 % and 100 % of the queries,
with standard errors over seeds, and the paired differences. First, a learning-rate sweep measures what
the log grid's resolution costs (``lr_sensitivity``).

    python -m scripts.experiments.order_aware_operators                       # 20 seeds x 100 queries
    python -m scripts.experiments.order_aware_operators --dataset=boston --searchers=regularized_evolution
    python -m scripts.experiments.order_aware_operators --seeds=8 --queries=60 --num=16
"""

from __future__ import annotations

import time

import jax
import numpy as np
from absl import flags

from nas.experiment import cli

_SEEDS = flags.DEFINE_integer("seeds", 20, "Seeds per searcher and operator set (paired).")
_QUERIES = flags.DEFINE_integer("queries", 100, "Queries per run.")
_NUM = flags.DEFINE_integer("num", 0, "Grid points of each continuous range (0: the library's default resolution).")
_SEARCHERS = flags.DEFINE_list("searchers", ["regularized_evolution", "local_search"], "Searchers to compare.")
_DATASET = flags.DEFINE_enum("dataset", "diabetes", ["diabetes", "boston", "naval"], "The objective mlp/<dataset>.")
_SPLIT = flags.DEFINE_integer("split", 0, "Data split.")
_SENSITIVITY = flags.DEFINE_integer("sensitivity_seeds", 16, "Training seeds of the learning-rate sweep (0: skip it).")

OPTIONS = {  # small populations for a 100-query budget
    "regularized_evolution": dict(population_size=20, tournament_size=5, num_init=10),
    "local_search": dict(num_init=10),
    "random_search": {},
}


def mlp_grid_space(order_aware: bool, num: int | None):
    """The MLP space with continuous ranges as grids of ``num`` points (None: ``spaces.params``' default)."""
    from spaces.hpo import HPOSpace, categorical, grid
    from spaces.params import Float, Int

    hps = [
        categorical("activation", ["identity", "logistic", "tanh", "relu"]),
        Int(8, 128, log=True, num=5).hyperparameter("hidden_layer_size"),
        categorical("solver", ["sgd", "adam"]),
        Float(1e-5, 1.0, log=True, num=num).hyperparameter("learning_rate_init"),
        Float(0.0, 0.99, num=num, when={"solver": ["sgd"]}).hyperparameter("momentum"),
        Float(0.5, 0.999, num=num, when={"solver": ["adam"]}).hyperparameter("beta_1"),
        Float(1e-7, 1e-1, log=True, num=num).hyperparameter("alpha"),
        grid("batch_size", [16, 32, 64]),
    ]
    return HPOSpace("mlp_grid", hps, order_aware=order_aware)


def incumbent_rmse(searcher: str, space, bench, keys, queries: int) -> tuple[np.ndarray, np.ndarray]:
    """f64[seeds, queries] x2: validation and test RMSE of the incumbent after each query."""
    from nas.engine.incumbent import incumbent_curve
    from nas.engine.runner import make_search
    from nas.searchers import make_searcher

    s = make_searcher(searcher, space, max_queries=queries, **OPTIONS.get(searcher, {}))
    hist = jax.jit(jax.vmap(make_search(s), in_axes=(0, None)))(keys, bench)
    best, reported = incumbent_curve(hist.score[:, :queries], hist.report_score[:, :queries])
    return bench.report(np.asarray(best)), bench.report(np.asarray(reported))


def lr_sensitivity(data, bench_name: str, seeds: int) -> None:
    """What the log grid's resolution costs: one configuration (Adam, ReLU, 64 units, batch 32, beta_1 0.9,
    alpha 1e-4) trained at learning rates 1e-4 .. 1e-1 every 1/32 decade (half a step of the default grid of
    16 per decade: the farthest any learning rate is from a grid value) with ``seeds`` training seeds each;
    prints how much half a step moves the seed-mean validation RMSE, beside the seed-to-seed spread."""
    from spaces.benchmarks.mlp_training import MLPTraining
    from spaces.hpo import HPOSpace
    from spaces.params import Float

    lr = Float(1e-4, 1e-1, log=True, num=97)
    space = HPOSpace("lr_sweep", [lr.hyperparameter("learning_rate_init")])
    fixed = dict(activation="relu", solver="adam", hidden_layer_size=64, batch_size=32, beta_1=0.9, alpha=1e-4)
    bench = MLPTraining.build(data, space, bench_name, **fixed)
    tokens = jax.numpy.arange(97, dtype=jax.numpy.int32)[:, None]
    keys = jax.random.split(jax.random.PRNGKey(7), seeds)
    t0, c0 = time.time(), time.process_time()
    valid = bench.report(np.asarray(jax.jit(jax.vmap(bench.query, in_axes=(0, None)))(keys, tokens)["valid"]))
    mean, std = valid.mean(axis=0), valid.std(axis=0, ddof=1)
    best = int(np.argmin(mean))
    moves = []  # half a grid step at 16, 8 and 4 values per decade: 1/32, 1/16, 1/8 decade from the best
    for k in (1, 2, 4):
        near = [i for i in (best - k, best + k) if 0 <= i < len(mean)]
        far = max(near, key=lambda i: abs(mean[i] - mean[best]))
        paired = valid[:, far] - valid[:, best]  # the same training seeds: a paired difference
        moves.append(f"{abs(paired.mean()):.2f} +- {paired.std(ddof=1) / np.sqrt(seeds):.2f}")
    print(
        f"learning-rate sweep ({seeds} training seeds, {time.time() - t0:.0f} s wall, {time.process_time() - c0:.0f} s "
        f"CPU): best seed-mean validation RMSE {mean[best]:.2f} at lr {lr.values()[best]:g}, seed-to-seed std "
        f"{std[best]:.2f} there; 1/32, 1/16 and 1/8 decade from it (half a step of a grid of 16, 8 and 4 values per "
        f"decade) the mean moves by {moves[0]}, {moves[1]} and {moves[2]} (paired s.e.)"
    )


def main(argv):
    del argv
    from spaces.benchmarks import uci
    from spaces.benchmarks.mlp_training import MLPTraining

    n, q, res = _SEEDS.value, _QUERIES.value, _NUM.value or None
    name = f"mlp/{_DATASET.value}"
    if _DATASET.value == "diabetes":
        data = uci.load_diabetes(split=_SPLIT.value)
    else:
        data = uci.load_uci(_DATASET.value, split=_SPLIT.value)
    if _SENSITIVITY.value:
        lr_sensitivity(data, name, _SENSITIVITY.value)
    keys = jax.random.split(jax.random.PRNGKey(2024), n)
    marks = [q // 4, q // 2, q]
    grids = f"grids of {res} points" if res else "default grids"
    print(f"{name} split {_SPLIT.value}, {n} paired seeds x {q} queries, continuous ranges as {grids}")
    after = " / ".join(map(str, marks))
    print(f"searcher | operators | validation, then test RMSE of the incumbent after {after} queries (mean +- s.e.)")
    for searcher in _SEARCHERS.value:
        curves = {}
        for aware in (False, True):
            space = mlp_grid_space(aware, res)
            bench = MLPTraining.build(data, space, name)
            t0, c0 = time.time(), time.process_time()
            curves[aware] = incumbent_rmse(searcher, space, bench, keys, q)
            label = "order-aware" if aware else "categorical"
            wall, cpu = time.time() - t0, time.process_time() - c0
            print(f"{searcher} | {label} | {_cells(curves[aware], marks)}  [{wall:.0f} s wall, {cpu:.0f} s CPU]")
        with np.errstate(invalid="ignore"):  # inf - inf before a first finite score: NaN, never at the marks
            diff = [a - c for a, c in zip(curves[True], curves[False])]  # negative: order-aware better (lower RMSE)
        wins = [int(np.sum(d[:, -1] < 0)) for d in diff]
        print(f"{searcher} | paired difference | {_cells(diff, marks, '+')}  (order-aware lower at the end in "
              f"{wins[0]} (validation) and {wins[1]} (test) of {n} seeds)")  # fmt: skip


def _cells(curves, marks, sign="") -> str:
    """``valid a / b / c; test a / b / c`` at the query counts ``marks``."""
    n = curves[0].shape[0]
    parts = []
    for what, c in zip(("valid", "test"), curves):
        cells = [f"{c[:, m - 1].mean():{sign}.2f} +- {c[:, m - 1].std(ddof=1) / np.sqrt(n):.2f}" for m in marks]
        parts.append(f"{what} " + " / ".join(cells))
    return "; ".join(parts)


if __name__ == "__main__":
    cli.run(main)
