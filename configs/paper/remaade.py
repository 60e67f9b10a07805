"""ReMAADE as the text of "Hyperparameter optimization with REINFORCE and Transformers" describes it
(Sections V and VII), beside the library's default and each text item switched on alone, on the
benchmark named by the argument (NB201 cifar10 by default; the benchmarks of configs/table3.py),
150 queries, 500 trials as in the paper:

    python -m scripts.train --config configs/paper/remaade.py:nb201/cifar10 --workdir /tmp/paper_remaade \
        --config.test_data=../shared/data/nb201/nats_bench_test_acc.csv
    python -m scripts.experiments.paired_effects --workdir /tmp/paper_remaade --reference remaade

The text's items (docs/research/fidelity.md, "ReMAADE and ReACTS"): the clipped objective as printed in eq. 11,
``A min(r, clip(r, 1 - eps, 1 + eps))`` (the library: Schulman's ``min(r A, clip(r) A)``); one update
of theta per batch (Algorithm 1, line 8; eq. 14; the library: 4 PPO epochs); B = 30, alpha = 1e-2,
d = 36, M = 1, S = 1, eps = 0.1 and Adam (Section VII; the library's defaults too); no entropy term
(optional "if we have a large exploration budget"). The baseline b is "a baseline function" (eq. 1):
the batch mean is the library's reading, ``remaade_ema`` a moving average (decay 0.9). With one
update per batch the ratio r is 1 wherever the gradient is taken, so the text's PPO is REINFORCE
(``remaade_reinforce``, Table IV's "ReMAADE w/o PPO").
"""

from configs.table3 import REMAADE, base_config
from nas.experiment.config import searcher_configs

TEXT = {"ppo": True, "ppo_objective": "literal", "ppo_epochs": 1, "entropy_coef": 0.0}


def get_config(arg=None):
    config = base_config(arg)
    config.searchers = searcher_configs(
        remaade=REMAADE,
        remaade_paper={**REMAADE, **TEXT},
        remaade_literal={**REMAADE, "ppo_objective": "literal"},
        remaade_one_epoch={**REMAADE, "ppo_epochs": 1},
        remaade_ema={**REMAADE, "baseline_decay": 0.9},
        remaade_reinforce={**REMAADE, "ppo": False},
        random_search={"name": "random_search"},  # the comparison's floor
    )
    return config
