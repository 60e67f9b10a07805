"""Multi-fidelity searchers beside single-fidelity ones on a benchmark with fidelities, at a compute budget
of 100 full trainings: successive halving, Hyperband, BOHB, ASHA (4 workers) and the multi-fidelity
BANANAS, and random search, regularized evolution, local search and BANANAS (each query one full
training). The argument names the benchmark (default ``nb201_12_200/cifar10``: NAS-Bench-201 after 12
and 200 epochs, ``configs/nb201_fidelities.py``):

    python -m scripts.train --config configs/multifidelity.py --workdir /tmp/mf \
        --config.test_data=../shared/data/nb201/nats_bench_test_acc.csv

The multi-fidelity searchers take the benchmark's fidelities; ``max_queries`` is the budget in full
evaluations for every searcher. The reports read every searcher against compute (``format_table``'s
10/25/50/100 % columns, ``summary.json``'s ``budget``, ``curves.png``'s cost and wall-clock panels).
"""

import ml_collections

import configs.nb201_fidelities  # noqa: F401  (registers nb201_12_200/*)
from configs import default
from nas.experiment.config import searcher_configs

MULTI_FIDELITY = {
    "successive_halving": {"name": "successive_halving"},
    "hyperband": {"name": "hyperband"},
    "bohb": {"name": "bohb"},
    "asha": {"name": "asha", "workers": 4},
    "mf_bananas": {"name": "mf_bananas"},
}


def get_config(arg=None):
    config = ml_collections.ConfigDict(default.get_config().to_dict())
    config.benchmark = arg or "nb201_12_200/cifar10"
    config.num_trials = 20
    config.max_queries = 100
    config.searchers = searcher_configs(**MULTI_FIDELITY, **default.BASELINES, bananas={"name": "bananas"})
    return config
