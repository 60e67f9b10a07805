"""BANANAS vs GP-BO vs regularized evolution, local search and random search at 150 queries
(BANANAS, White, Neiswanger & Savani, 2021, Figure 4 left), on the benchmark named by the argument:

    python -m scripts.train --config configs/bananas_comparison.py:nb201/cifar10 --workdir /tmp/bo_cmp_c10 \
        --config.test_data=../shared/data/nb201/nats_bench_test_acc.csv
    python -m scripts.train --config configs/bananas_comparison.py:hpolib/naval_propulsion --workdir /tmp/bo_cmp_naval

NB201 datasets: cifar10 (= cifar10-valid), cifar100, imagenet16; HPOLib tasks: naval_propulsion,
parkinsons_telemonitoring, protein_structure, slice_localization. Seed-mean validation ("mean"
protocol), 100 trials (``--config.num_trials=500`` where time allows). ``bananas`` uses the
defaults of the authors' released code (t0 = k = 10, 5 members, 150 epochs, independent
Thompson sampling, 100 candidates mutating the best architecture with 1-2 edits; path encoding
where the space has one, else one-hot); ``bananas_ucb`` is the paper's text (UCB with beta =
0.5, one-edit mutations). GP-BO: exact GP, Hamming kernel on the adjacency (else one-hot)
encoding, EI, the same candidates as ``bananas``. ``reinforce``: the REINFORCE baseline of BANANAS' Section 5
(the NAS-Bench-101 implementation of Ying et al. 2019: an independent categorical distribution per decision,
trained with REINFORCE), the library's factorized policy with REINFORCE and the settings of
``configs/table4.py``'s plain vanilla REINFORCE (B = 30, Adam 1e-2, the batch-mean baseline).
"""

from configs import default
from configs.table3 import REMAADE
from nas.experiment.config import searcher_configs


def get_config(arg=None):
    config = default.get_config()
    config.benchmark = arg or "nb201/cifar10"
    config.num_trials = 100
    config.searchers = searcher_configs(
        **default.BASELINES,
        bananas={"name": "bananas", "acquisition": "its", "max_edits": 2},
        bananas_ucb={"name": "bananas", "acquisition": "ucb", "max_edits": 1},
        gp_bo={"name": "gp_bo", "acquisition": "ei"},
        reinforce={**REMAADE, "policy": "factorized", "ppo": False},
    )
    return config
