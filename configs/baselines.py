"""The three baselines (random search, regularized evolution, local search) on
any registered benchmark, named by the config argument (default nb201/cifar10):

    python -m scripts.train --config configs/baselines.py:hpolib/naval_propulsion --workdir /tmp/naval
    python -m scripts.train --config configs/baselines.py:nb201/cifar100 --workdir /tmp/c100 \
        --config.test_data=../shared/data/nb201/nats_bench_test_acc.csv
"""

from configs import default


def get_config(arg=None):
    config = default.get_config()
    config.benchmark = arg or "nb201/cifar10"
    return config
