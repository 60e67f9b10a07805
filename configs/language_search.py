"""The searchers of Negrinho et al. (2019), Section 7.2 (random, regularized evolution, SMBO with a
linear surrogate, MCTS with UCT) on a language space, every architecture trained for real.

``get_config(task)``: ``diabetes_mlp`` (default; an MLP space on scikit-learn's diabetes
regression) or ``digits_cnn`` (a CNN space on scikit-learn's 8x8 digits; each distinct network
shape costs an XLA compile of its training program, so this one is slower). A small budget
(nas.experiment.task_experiment; docs/research/language.md has the measured figures):

    python -m scripts.language_search --config configs/language_search.py --workdir /tmp/lang_diab
    python -m scripts.language_search --config configs/language_search.py:digits_cnn --workdir /tmp/lang_digits

Searcher settings follow the paper: regularized evolution with population 100 and tournament 25
(started from 10 random architectures, ``num_init``, so that it evolves within a small budget),
SMBO scoring 512 random architectures with probability 0.1 of a random one, MCTS with
exploration 0.33. Any other registered searcher runs too, through flattening
(``--config.only`` picks labels; add entries to ``SEARCHERS``).
"""

import ml_collections

from nas.experiment.config import searcher_configs
from spaces.language.tasks import TASKS
from spaces.language.training import TrainConfig

BATCH = 8  # architectures proposed (and trained together) per step


def get_config(arg=None):
    task = arg or "diabetes_mlp"
    config = ml_collections.ConfigDict()
    config.task = task
    # TrainConfig fields: the task's epochs, batch size and learning rate (listed so that the command line
    # can override them, e.g. --config.train.epochs=4); groups of one signature are padded to 4 rows so
    # that each signature compiles one program
    defaults = TASKS[task][2] if task in TASKS else TrainConfig()  # an unknown task is refused when validated
    config.train = ml_collections.ConfigDict(
        {"epochs": defaults.epochs, "batch_size": defaults.batch_size, "learning_rate": defaults.learning_rate,
         "max_group": 4, "min_group": 4}
    )  # fmt: skip
    config.num_trials = 2
    config.max_queries = 24
    config.seed = 0
    config.report_every = 8
    config.only = ""
    config.searchers = searcher_configs(**SEARCHERS)
    return config


SEARCHERS = {
    "random": {"name": "random_search", "batch_size": BATCH},
    "evolution": {
        "name": "regularized_evolution",
        "batch_size": BATCH,
        "population_size": 100,
        "tournament_size": 25,
        "num_init": 10,
    },
    "smbo": {"name": "smbo_linear", "batch_size": BATCH, "num_candidates": 512, "random_prob": 0.1},
    "mcts": {"name": "mcts", "batch_size": BATCH, "exploration": 0.33},
}
