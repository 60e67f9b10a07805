"""Table 2 / Figure 9 of Negrinho et al. (2019) at digits scale: searchers on the Genetic space.

Section 7.2 compares random search, regularized evolution, SMBO (linear surrogate) and MCTS on
the Genetic CNN space (Xie & Yuille 2017), every architecture trained. Here the space is
``spaces.language.table1.genetic_gated_space`` (512 architectures, 2 stages of 3 and 4 nodes;
the connection code is traced, so every architecture trains in one compiled, vmapped program)
on scikit-learn digits, 2 epochs of Adam (learning rate 0.003; the paper trains 25 epochs at 0.001), and BANANAS and
ReMAADE run too, through flattening. 32 architectures per run, 3 seeds:

    python -m scripts.language_search --config configs/language_table2.py --workdir /tmp/lang_table2

Searchers propose 4 architectures per step (trained together; groups padded to 4 rows, so the
whole experiment compiles one training program). Regularized evolution keeps the paper's
tournament of 25 in a population of at most 100, started from 8 random architectures; SMBO
scores 512 random architectures, a random one with probability 0.1; MCTS explores with 0.33.
BANANAS (its ensemble of 5 MLPs, path-free one-hot encoding of the flattened tokens) starts from
8 random architectures; ReMAADE samples batches of 4 from its autoregressive policy.
"""

import ml_collections

from configs import language_search
from nas.experiment.config import searcher_configs

BATCH = 4


def get_config(arg=None):
    config = language_search.get_config(arg or "genetic_digits")
    config.train = ml_collections.ConfigDict({"max_group": BATCH, "min_group": BATCH})
    config.num_trials = 3
    config.max_queries = 32
    config.searchers = searcher_configs(**SEARCHERS)
    return config


SEARCHERS = {
    **language_search.SEARCHERS,
    **{name: {**entry, "batch_size": BATCH} for name, entry in language_search.SEARCHERS.items()},
    "bananas": {"name": "bananas", "batch_size": BATCH, "num_init": 8},
    "remaade": {"name": "remaade", "batch_size": BATCH},
}
SEARCHERS["evolution"] = {**SEARCHERS["evolution"], "num_init": 8}
