"""BANANAS vs GP-BO vs regularized evolution, local search and random search at 150 queries
(BANANAS, seed paper 001, Figure 4 left), on the benchmark named by the argument:

    python -m scripts.train --config configs/bananas_comparison.py:nb201/cifar10 --workdir /tmp/bo_cmp_c10 \
        --config.test_data=../shared/data/nb201/nats_bench_test_acc.csv
    python -m scripts.train --config configs/bananas_comparison.py:hpolib/naval_propulsion --workdir /tmp/bo_cmp_naval

NB201 datasets: cifar10 (= cifar10-valid), cifar100, imagenet16; HPOLib tasks: naval_propulsion,
parkinsons_telemonitoring, protein_structure, slice_localization. Seed-mean validation ("mean"
protocol), 100 trials (``--config.num_trials=500`` where time allows). BANANAS uses the paper's
settings (t0 = k = 10, 5 members, UCB beta = 0.5, 100 mutation candidates of the best
architecture; path encoding where the space has one, else one-hot; 150 epochs as in the paper's
code); ``bananas_its`` is the same with independent Thompson sampling, the acquisition of the
final version of BANANAS and of its code. GP-BO: exact GP, Hamming kernel on the adjacency (else
one-hot) encoding, EI.
"""

from configs import default


def get_config(arg=None):
    config = default.get_config()
    config.benchmark = arg or "nb201/cifar10"
    config.num_trials = 100
    config.searchers.bananas = {"name": "bananas", "acquisition": "ucb", "encoding": "auto", "acq_opt": "mutation"}
    config.searchers.bananas_its = {"name": "bananas", "acquisition": "its", "encoding": "auto"}
    config.searchers.gp_bo = {"name": "gp_bo", "acquisition": "ei"}
    return config
