"""Table V of "Hyperparameter optimization with REINFORCE and Transformers": ReMAADE with
ordering ensembles of S = 1, 2, 4, 6, 8, 16, 256 autoregressive orders (eq. 22), 3,200 queries,
with the paper's hyperparameters (``remaade_s<S>``: B, alpha, d, M and S of Section VII, no entropy
term, the library's 4-epoch PPO), with the entropy bonus and learning rate chosen for long budgets
(``remaade_long_s<S>``: ``configs/remaade_long.py``'s LONG_BUDGET, chosen on HPOLib naval, where this table is
reported; ``remaade_protein_s<S>``: CHOSEN_ON_PROTEIN, the same study's choice on HPOLib protein,
the one that leaves this table's benchmark out; run them on
fresh trial keys, ``--config.seed=2``; docs/research/remaade_long.md), and as the
text updates the policy (``remaade_text_s<S>``: one gradient step per batch, eq. 11 as printed, i.e.
REINFORCE; ``configs/paper/remaade.py``'s TEXT), beside regularized evolution and random search.

The paper runs this on NAS-Bench-101 (423k cells). Without the full NAS-Bench-101 file the
default here is the largest table shipped with the packages, HPOLib Naval Propulsion (62,208
configurations; 3,200 queries are 5% of it); NAS-Bench-201 (15,625 cells, 20%) saturates.

    python -m scripts.train --config configs/table5.py --workdir /tmp/table5_naval --config.num_trials=100
    python -m scripts.figures.remaade_long_figures --workdirs=/tmp/table5_naval
    python -m scripts.train --config configs/table5.py:nb101 --workdir /tmp/table5_nb101 \
        --config.data_path=/path/to/nasbench_only108.tfrecord
"""

from configs.paper.remaade import TEXT
from configs.remaade_long import BASELINES, CHOSEN_ON_PROTEIN, LONG_BUDGET
from configs.table3 import REMAADE, base_config
from nas.experiment.config import searcher_configs

NUM_ORDERS = (1, 2, 4, 6, 8, 16, 256)


def get_config(arg=None):
    config = base_config(arg or "hpolib/naval_propulsion")
    config.max_queries = 3200
    config.report_every = 100
    config.chunk_steps = 5  # the searchers' metrics (entropy, fallback fraction) every 150 queries
    paper = {f"remaade_s{s}": {**REMAADE, "num_orders": s} for s in NUM_ORDERS}
    long = {f"remaade_long_s{s}": {**REMAADE, **LONG_BUDGET, "num_orders": s} for s in NUM_ORDERS}
    protein = {f"remaade_protein_s{s}": {**REMAADE, **CHOSEN_ON_PROTEIN, "num_orders": s} for s in NUM_ORDERS}
    text = {f"remaade_text_s{s}": {**REMAADE, **TEXT, "num_orders": s} for s in NUM_ORDERS}
    config.searchers = searcher_configs(**paper, **long, **protein, **text, **BASELINES)
    return config
