"""Table V of "Hyperparameter optimization with REINFORCE and Transformers": ReMAADE with
ordering ensembles of S = 1, 2, 4, 6, 8, 16, 256 autoregressive orders (eq. 22), 3,200 queries.

The paper runs this on NAS-Bench-101 (423k cells). Without the full NAS-Bench-101 file the
default here is the largest table shipped with the packages, HPOLib Naval Propulsion (62,208
configurations; 3,200 queries are 5% of it); NAS-Bench-201 (15,625 cells, 20%) saturates.

    python -m scripts.train --config configs/table5.py --workdir /tmp/table5_naval --config.num_trials=50
    python -m scripts.train --config configs/table5.py:nb101 --workdir /tmp/table5_nb101 \
        --config.data_path=/path/to/nasbench_only108.tfrecord
"""

from configs.table3 import REMAADE, base_config
from nas.experiment.config import searcher_configs

NUM_ORDERS = (1, 2, 4, 6, 8, 16, 256)


def get_config(arg=None):
    config = base_config(arg or "hpolib/naval_propulsion")
    config.max_queries = 3200
    config.report_every = 100
    config.searchers = searcher_configs(**{f"remaade_s{s}": {**REMAADE, "num_orders": s} for s in NUM_ORDERS})
    return config
