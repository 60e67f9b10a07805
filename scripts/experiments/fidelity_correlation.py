"""Rank correlation between the fidelities of the benchmarks that have them (Spearman's rho, Kendall's tau-b).

    python -m scripts.experiments.fidelity_correlation [--nb201_12epoch=../shared/data/nb201/mini_nb201_12epoch.pd]
        [--nb201_test_csv=../shared/data/nb201/nats_bench_test_acc.csv]
        [--nb101_data1k=../shared/data/nb101/data-1k.json] [--nb101_data=PATH]
        [--mlp_tasks=naval] [--mlp_samples=200] [--mlp_fidelities=50,100,200,400,800] [--seed=0]

For every pair of fidelities (low, high) of a table: the correlation over the configurations both
fidelities hold, of the seed-mean validation score and, where the table has a test split, of the test
score. NAS-Bench-201: 12 vs 200 epochs, all 15,625 cells of cifar10 (NB201's cifar10-valid run for
validation), cifar100 and imagenet16. NAS-Bench-101: each pair of 4/12/36/108 epochs, the 1,000 cells of
data-1k (one run per budget) and, given ``--nb101_data``, the official file (mean of 3 repeats). MLP
training (``mlp/<task>``, iterations as the fidelity): ``--mlp_samples`` configurations drawn uniformly
from the space without ``max_iter``, each trained at every fidelity with one seed (a continuing
objective: the training at a higher fidelity continues the lower one's), validation and test RMSE;
diverged runs (``-inf``) are left out of the pairs and counted. A table is skipped, with the reason,
when its file is absent. Prints a markdown table.
"""

from __future__ import annotations

import itertools
import os
import time

import jax
import numpy as np
from absl import flags

from nas.experiment import cli
from spaces.benchmarks.multi_fidelity_table import rank_correlations, table_pairs
from spaces.benchmarks.registry import make_benchmark
from spaces.files import DataError

_NB201 = flags.DEFINE_string("nb201_12epoch", "../shared/data/nb201/mini_nb201_12epoch.pd", "NB201 12-epoch pickle.")
_NB201_TEST = flags.DEFINE_string("nb201_test_csv", "../shared/data/nb201/nats_bench_test_acc.csv", "NB201 test CSV.")
_DATA1K = flags.DEFINE_string("nb101_data1k", "../shared/data/nb101/data-1k.json", "nasbench-vis data-1k.json.")
_NB101 = flags.DEFINE_string("nb101_data", "", "Official NAS-Bench-101 TFRecord with 4/12/36/108 epochs, or cache.")
_MLP_TASKS = flags.DEFINE_list("mlp_tasks", ["naval"], "mlp/<task> objectives to sample.")
_MLP_SAMPLES = flags.DEFINE_integer("mlp_samples", 200, "Configurations sampled per MLP task.")
_MLP_FIDELITIES = flags.DEFINE_list("mlp_fidelities", ["50", "100", "200", "400", "800"], "Training iterations.")
_SEED = flags.DEFINE_integer("seed", 0, "Seed of the MLP sample and its trainings.")


def mlp_pairs(task: str, budgets: tuple, samples: int, seed: int) -> list[dict]:
    """Rank correlations of validation and test RMSE between every pair of iteration budgets, on a sample."""
    obj = make_benchmark(f"mlp/{task}", fidelities=budgets)
    key = jax.random.PRNGKey(seed)
    tokens = jax.vmap(obj.space.sample)(jax.random.split(jax.random.fold_in(key, 1), samples))
    query = jax.jit(obj.query)
    res = [jax.tree.map(np.asarray, query(key, tokens, np.full(samples, f, np.int32))) for f in range(len(budgets))]
    out = []
    for split in ("valid", "test"):
        for lo, hi in itertools.combinations(range(len(budgets)), 2):
            pair = (obj.fidelities[lo], obj.fidelities[hi])
            out.append({"split": split, "pair": pair, **rank_correlations(res[lo][split], res[hi][split])})
    return out


def tables() -> list[tuple[str, str, object]]:
    """(name, unit, loader) of every table with fidelities whose data is given."""
    out = []
    for ds in ("cifar10", "cifar100", "imagenet16"):
        test = _NB201_TEST.value if os.path.isfile(_NB201_TEST.value) else ""
        out.append((f"nb201/{ds}", "epochs", lambda ds=ds, test=test: make_benchmark(
            f"nb201/{ds}", fidelity_data=_NB201.value, test_csv=test)))  # fmt: skip
    epochs = (4, 12, 36, 108)
    out.append(("nb101/data1k", "epochs", lambda: make_benchmark("nb101/data1k", data_path=_DATA1K.value,
                                                                   fidelities=epochs)))  # fmt: skip
    if _NB101.value:
        out.append(("nb101", "epochs", lambda: make_benchmark("nb101", data_path=_NB101.value, fidelities=epochs)))
    return out


def main(argv):
    del argv
    print("| objective | split | fidelities | configurations | Spearman | Kendall |")
    print("|---|---|---|---|---|---|")

    def show(name, unit, rows, seconds):
        for r in rows:
            lo, hi = (f"{x:g}" for x in r["pair"])
            n = f"{r['n']:,}" + (f" ({r['left_out']} failed)" if r["left_out"] else "")
            print(f"| {name} | {r['split']} | {lo} vs {hi} {unit} | {n} | {r['spearman']:.3f} | {r['kendall']:.3f} |")
        print(f"<!-- {name}: {seconds:.1f} s -->")

    for name, unit, load in tables():
        t = time.perf_counter()
        try:
            rows = table_pairs(load())
        except DataError as e:
            print(f"<!-- {name} skipped: {e} -->")
            continue
        show(name, unit, rows, time.perf_counter() - t)
    budgets = tuple(int(b) for b in _MLP_FIDELITIES.value)
    for task in _MLP_TASKS.value:
        t = time.perf_counter()
        show(f"mlp/{task} ({_MLP_SAMPLES.value} sampled)", "iterations",
             mlp_pairs(task, budgets, _MLP_SAMPLES.value, _SEED.value), time.perf_counter() - t)  # fmt: skip


if __name__ == "__main__":
    cli.run(main)
