"""Table IV (ablation) of "Hyperparameter optimization with REINFORCE and Transformers":
plain vanilla REINFORCE (factorized policy, eq. 21), REINFORCE with MADE, ReMAADE w/o PPO,
ReACTS w/o PPO and the LSTM controller (Zoph & Le), with random search and ReMAADE (PPO) for
reference; all policy-gradient variants use B = 30, alpha = 1e-2, d = 36, S = 1; 150 queries,
500 trials. The argument names the benchmark as in configs/table3.py:

    python -m scripts.train --config configs/table4.py --workdir /tmp/table4_c10
    python -m scripts.train --config configs/table4.py:hpolib/naval_propulsion --workdir /tmp/table4_naval
    python -m scripts.train --config configs/table4.py --workdir /tmp/table4_c10_reacts \
        --config.only=reacts_wo_ppo --config.num_trials=50
"""

from configs.table3 import REACTS, REMAADE, base_config
from nas.experiment.config import searcher_configs


def get_config(arg=None):
    config = base_config(arg)
    config.searchers = searcher_configs(
        random_search={"name": "random_search"},
        plain_vanilla_reinforce={**REMAADE, "policy": "factorized", "ppo": False},
        reinforce_with_made={**REMAADE, "policy": "made", "ppo": False},
        lstm_controller={**REMAADE, "policy": "lstm", "ppo": False},
        remaade_wo_ppo={**REMAADE, "ppo": False},
        remaade=REMAADE,
        reacts_wo_ppo={**REACTS, "ppo": False},
    )
    return config
