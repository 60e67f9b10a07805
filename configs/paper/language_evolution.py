"""Negrinho et al. (2019), Section 7.2 / Table 2 as the text describes it: random search, regularized
evolution (population 100, sample size 25, started from 100 random architectures as Real et al.'s
Algorithm 1), SMBO (linear surrogate, 512 random candidates, a random architecture with probability 0.1)
and MCTS (UCT, exploration 0.33) on the Genetic space, 256 architectures per run, each trained 25 epochs
with Adam at learning rate 0.001, 3 runs. The argument names the data set: ``cifar10`` (the paper's;
3 stages of 3, 4 and 5 nodes as Xie & Yuille's CIFAR-10 code of 19 bits, with 8, 16 and 32 channels, a
choice of this config: ``--config.space.channels``; needs tensorflow-datasets and CIFAR-10 prepared in its
default data directory) or ``digits`` (the same searchers on the library's digits-scale Genetic space, 2
stages):

    python -m scripts.language_search --config configs/paper/language_evolution.py:cifar10 --workdir /tmp/paper_lang
    python -m scripts.language_search --config configs/paper/language_evolution.py:digits --workdir /tmp/paper_lang_d

``nb201`` is a tabular stand-in that measures the initial population alone (a ``scripts.train`` config):
the same evolution from 100 or from 8 random architectures, and random search, on NAS-Bench-201
cifar10 with the paper's 256 queries, 200 trials:

    python -m scripts.train --config configs/paper/language_evolution.py:nb201 --workdir /tmp/paper_evo_nb201 \
        --config.test_data=../shared/data/nb201/nats_bench_test_acc.csv

Nothing here is new code: the data set, the space's stages and widths and the training are config
fields (``dataset``, ``space``, ``train``). The library's digits runs (``configs/language_table2.py``)
start evolution from 8 random architectures in a budget of 32.
"""

import ml_collections

from configs import default, language_search
from nas.experiment.config import searcher_configs

BATCH = 4
CIFAR_GENETIC = {"nodes": [3, 4, 5], "channels": [8, 16, 32]}


EVOLUTION = {"name": "regularized_evolution", "batch_size": BATCH, "population_size": 100, "tournament_size": 25}


def get_config(arg=None):
    dataset = arg or "cifar10"
    if dataset == "nb201":
        return nb201_stand_in()
    if dataset not in ("cifar10", "digits"):
        raise ValueError(f"data set {dataset!r}: choose cifar10 (the paper's), digits or nb201 (a tabular stand-in)")
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
        evolution={**EVOLUTION, "num_init": 0},  # 0 = the population size: 100 random architectures first
        smbo={"name": "smbo_linear", "batch_size": BATCH, "num_candidates": 512, "random_prob": 0.1},
        mcts={"name": "mcts", "batch_size": BATCH, "exploration": 0.33},
    )
    return config


def nb201_stand_in():
    config = default.get_config()
    config.num_trials = 200
    config.max_queries = 256
    config.searchers = searcher_configs(
        evolution={**EVOLUTION, "num_init": 0},
        evolution_init8={**EVOLUTION, "num_init": 8},
        random={"name": "random_search", "batch_size": BATCH},
    )
    return config
