"""BANANAS as the paper's text describes it (White, Neiswanger & Savani, 2021), beside the library's
default (the authors' released code) and each text item switched on alone, on the benchmark named by
the argument (NB201 cifar10 by default):

    python -m scripts.train --config configs/paper/bananas.py:nb201/cifar10 --workdir /tmp/paper_bananas \
        --config.test_data=../shared/data/nb201/nats_bench_test_acc.csv

The text's items (docs/research/fidelity.md, "BANANAS"): UCB with beta = 0.5 (eq. 1, Section 5.1), the meta
network trained with Adam at learning rate 0.1 (Section 5.1), a mutation changes one thing (Section 4),
Algorithm 1's candidates are mutations of the k best architectures (the text gives no k and no c: k = 10,
the code's query batch, and c = 100, the code's candidate count), the top 10 candidates queried per
iteration (Section 5.1; the library's batch of 10 already), the path encoding (full, not truncated).
``bananas_cont_adj`` is ablation (2), the continuous adjacency encoding. 150 queries, 100 trials.
"""

from configs import default
from nas.experiment.config import searcher_configs

DEFAULT = {"name": "bananas", "acquisition": "its", "max_edits": 2}  # the released code's choices
TEXT = {"acquisition": "ucb", "beta": 0.5, "learning_rate": 0.1, "max_edits": 1, "num_parents": 10, "encoding": "path"}


def get_config(arg=None):
    config = default.get_config()
    config.benchmark = arg or "nb201/cifar10"
    config.num_trials = 100
    config.searchers = searcher_configs(
        bananas=DEFAULT,
        bananas_paper={**DEFAULT, **TEXT},
        bananas_ucb={**DEFAULT, "acquisition": "ucb"},
        bananas_lr01={**DEFAULT, "learning_rate": 0.1},
        bananas_one_edit={**DEFAULT, "max_edits": 1},
        bananas_k10={**DEFAULT, "num_parents": 10},
        bananas_cont_adj={**DEFAULT, "encoding": "continuous_adjacency"},
        random_search={"name": "random_search"},  # the comparison's floor
    )
    return config
