"""Negrinho et al. (2019), Section 7.2 / Table 2 as the text describes it: random search, regularized
evolution (population 100, sample size 25, started from 100 random architectures as Real et al.'s
Algorithm 1), SMBO (linear surrogate, 512 random candidates, a random architecture with probability 0.1)
and MCTS (UCT, exploration 0.33) on the Genetic space, 256 architectures per run, each trained 25 epochs
with Adam at learning rate 0.001, 3 runs. The argument names the data set: ``cifar10`` (the paper's;
Xie & Yuille's CIFAR-10 network, 3 stages of 3, 4 and 5 nodes of 8, 16 and 32 channels; needs
tensorflow-datasets and its prepared CIFAR-10 files, ``--config.data_dir`` is not a field: tfds' default
directory) or ``digits`` (the same searchers on the library's digits-scale Genetic space, 2 stages):

    python -m scripts.language_search --config configs/paper/language_evolution.py:cifar10 --workdir /tmp/paper_lang
    python -m scripts.language_search --config configs/paper/language_evolution.py:digits --workdir /tmp/paper_lang_d

Nothing here is new code: the data set, the space's stages and widths and the training are config
fields (``dataset``, ``space``, ``train``). The library's digits runs (``configs/language_table2.py``)
start evolution from 8 random architectures in a budget of 32.
"""

import ml_collections

from configs import language_search
from nas.experiment.config import searcher_configs

BATCH = 4
CIFAR_GENETIC = {"nodes": [3, 4, 5], "channels": [8, 16, 32]}


def get_config(arg=None):
    dataset = arg or "cifar10"
    if dataset not in ("cifar10", "digits"):
        raise ValueError(f"data set {dataset!r}: choose cifar10 (the paper's) or digits")
    config = language_search.get_config("genetic")
    config.dataset = dataset
    config.space = ml_collections.ConfigDict(CIFAR_GENETIC if dataset == "cifar10" else {})
    config.train = ml_collections.ConfigDict(
        {"epochs": 25, "learning_rate": 1e-3, "batch_size": 64, "max_group": BATCH, "min_group": BATCH}
    )
    config.num_trials = 3
    config.max_queries = 256
    config.report_every = 32
    config.searchers = searcher_configs(
        random={"name": "random_search", "batch_size": BATCH},
        evolution={
            "name": "regularized_evolution",
            "batch_size": BATCH,
            "population_size": 100,
            "tournament_size": 25,
            "num_init": 0,  # 0 = the population size: 100 random architectures first
        },
        smbo={"name": "smbo_linear", "batch_size": BATCH, "num_candidates": 512, "random_prob": 0.1},
        mcts={"name": "mcts", "batch_size": BATCH, "exploration": 0.33},
    )
    return config
