"""Optuna's TPE (Bergstra et al., 2011; the ``tpe`` peer of ``nas.experiment.peers``) on a tabular benchmark, with the
settings of ``configs/bananas_comparison.py`` (150 queries, seed-mean validation, the same trial seeds), so
its numbers sit next to BANANAS, GP-BO, regularized evolution, local search and random search:

    python -m scripts.train --config configs/tpe_comparison.py:nb201/cifar10 --workdir /tmp/tpe_c10 \
        --config.test_data=../shared/data/nb201/nats_bench_test_acc.csv --config.num_trials=20
    python -m scripts.train --config configs/tpe_comparison.py:hpolib/naval_propulsion --workdir /tmp/tpe_naval \
        --config.num_trials=20

TPE runs on the host (one Optuna study per seed, about 25-50 ms per proposal), hence the option of fewer
trials than the 100 of ``bananas_comparison``; trial ``i`` uses the same key in both configs. Needs Optuna
(``pip install optuna``).
"""

from configs import bananas_comparison
from nas.experiment.config import searcher_configs


def get_config(arg=None):
    config = bananas_comparison.get_config(arg)
    config.searchers = searcher_configs(tpe={"name": "tpe"})
    return config
