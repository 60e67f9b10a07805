"""BANANAS ablation (White, Neiswanger & Savani, 2021, Figure 4 right and Figure 6 right) on NAS-Bench-201 cifar10:
path vs adjacency encoding, ensemble vs GP predictor (GP with path or adjacency Hamming kernel),
mutation vs random acquisition optimization (1,000 random candidates, as in the paper), one-edit
vs 1-2-edit mutations, and the acquisition functions ITS (default) / UCB / EI / PI / TS. Every
variant changes one component of the default ``bananas`` (path, ensemble, ITS, 1-2 edits).
150 queries, 100 trials, "mean" protocol.

    python -m scripts.train --config configs/bananas_ablation.py --workdir /tmp/bo_ablation \
        --config.test_data=../shared/data/nb201/nats_bench_test_acc.csv

(On NAS-Bench-201 the "adjacency" encoding is the one-hot op of each of the 6 edges.)
"""

from configs import default
from nas.experiment.config import searcher_configs


def get_config(arg=None):
    config = default.get_config()
    config.benchmark = arg or "nb201/cifar10"
    config.num_trials = 100
    b = {"name": "bananas"}
    config.searchers = searcher_configs(
        **{
            "bananas": dict(b, encoding="path"),
            "bananas_adjacency": dict(b, encoding="adjacency"),
            "bananas_gp_path": dict(b, predictor="gp", encoding="path"),
            "bananas_gp_adjacency": dict(b, predictor="gp", encoding="adjacency"),
            "bananas_random_acq": dict(b, encoding="path", acq_opt="random", num_random=1000),
            "bananas_one_edit": dict(b, encoding="path", max_edits=1),
            "bananas_ucb": dict(b, encoding="path", acquisition="ucb"),
            "bananas_ei": dict(b, encoding="path", acquisition="ei"),
            "bananas_pi": dict(b, encoding="path", acquisition="pi"),
            "bananas_ts": dict(b, encoding="path", acquisition="ts"),
            "random_search": {"name": "random_search"},
        }
    )
    return config
