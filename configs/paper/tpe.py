"""Optuna's TPE (the ``tpe`` peer, Bergstra et al. 2011) as the ReMAADE paper's Table III and Section VIII
run it, plain Optuna (``tpe_pure``: every proposal queried, repeats included), beside the library's default
(``tpe``: a repeated proposal is not queried; after 5 in a row an edit of it is), on the benchmark named
by the argument. ``mlp/<data set>`` is Section VIII (``configs/hpo_mlp.py``: 100 trainings per trial, 100
trials), a table the Table III setting (``configs/bananas_comparison.py``: 150 queries, 20 trials):

    python -m scripts.train --config configs/paper/tpe.py:mlp/naval --workdir /tmp/paper_tpe_naval
    python -m scripts.train --config configs/paper/tpe.py:nb201/cifar10 --workdir /tmp/paper_tpe_c10 \
        --config.test_data=../shared/data/nb201/nats_bench_test_acc.csv

Needs Optuna (``pip install optuna``).
"""

from configs import bananas_comparison, hpo_mlp
from nas.experiment.config import searcher_configs


def get_config(arg=None):
    benchmark = arg or "mlp/naval"
    if benchmark.startswith("mlp/"):
        config = hpo_mlp.get_config(benchmark.split("/", 1)[1])
    else:
        config = bananas_comparison.get_config(benchmark)
        config.num_trials = 20
    config.searchers = searcher_configs(
        tpe={"name": "tpe"}, tpe_pure={"name": "tpe", "repeats": "requery"}, random_search={"name": "random_search"}
    )
    return config
