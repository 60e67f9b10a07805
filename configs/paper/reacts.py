"""ReACTS as the text of "Hyperparameter optimization with REINFORCE and Transformers" describes it
(Section VI, Algorithms 2 and 3), beside the library's default and each text item switched on alone,
on the benchmark named by the argument (NB201 cifar10 by default; the benchmarks of
configs/table3.py), 150 queries, 500 trials as in the paper:

    python -m scripts.train --config configs/paper/reacts.py:nb201/cifar10 --workdir /tmp/paper_reacts \
        --config.test_data=../shared/data/nb201/nats_bench_test_acc.csv
    python -m scripts.experiments.paired_effects --workdir /tmp/paper_reacts --reference reacts

The text's items (docs/research/fidelity.md, "ReMAADE and ReACTS"): the simulator phi^t computed at every step
from all batches so far with the weights of eq. 20 (Algorithm 2, line 6: a fit from scratch; the
library continues the last step's simulator for 30 epochs); one gradient step of eq. 17 per batch
(Algorithm 3, line 8; the library: 4 epochs of per-token PPO on eq. 17's advantages, a form the text
does not define). The other settings are ReMAADE's (Section VII) and the library's defaults.
"""

from configs.table3 import REACTS, base_config
from nas.experiment.config import searcher_configs

TEXT = {"ppo": False, "sim_warm_epochs": 0}


def get_config(arg=None):
    config = base_config(arg)
    config.searchers = searcher_configs(
        reacts=REACTS,
        reacts_paper={**REACTS, **TEXT},
        reacts_scratch={**REACTS, "sim_warm_epochs": 0},
        reacts_no_ppo={**REACTS, "ppo": False},
        random_search={"name": "random_search"},  # the comparison's floor
    )
    return config
