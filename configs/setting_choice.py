"""Choosing searcher settings on benchmarks that the reported tables do not use, with trial keys that the
reported runs do not use (docs/research/checklist.md, "How settings were chosen"). The argument is
``<method>,<benchmark>``; each candidate setting is a searcher of the config, all on the same trial keys
(paired), root seed 1 (the reported runs use seed 0):

    S=configs/setting_choice.py
    python -m scripts.train --config $S:alphax,analognas/baseline --workdir /tmp/choice_alphax_analog
    python -m scripts.train --config $S:alphax,hpolib/protein_structure --workdir /tmp/choice_alphax_protein
    python -m scripts.train --config $S:bananas,analognas/baseline --workdir /tmp/choice_bananas_analog
    python -m scripts.train --config $S:bananas,hpobench/credit_g --workdir /tmp/choice_bananas_credit
    python -m scripts.experiments.choose_settings --workdirs=/tmp/choice_alphax_analog,/tmp/choice_alphax_protein

ReMAADE's long-budget entropy weight is chosen with ``configs/remaade_long.py:hpolib/protein_structure``
(the same 15 settings as its original study, ``--config.seed=1``).

The choice benchmarks: AnalogNAS-Bench's digital-baseline accuracy (``analognas/baseline``: NAS-Bench-201's
15,625 cells trained by another pipeline, one value per cell) stands in for the NB201 tables; HPOLib protein
(not in Table III) and HPOBench's credit_g (not in the BANANAS comparison) for the HPO grids. The
criterion is what a searcher sees: the best validation score after ``max_queries`` queries, mean over
trials; ``choose_settings`` ranks the candidates on each benchmark and takes the best mean rank.
"""

from configs import default
from nas.experiment.config import searcher_configs

CHOICE_SEED = 1  # the reported runs use seed 0: their trial keys take no part in a choice
CANDIDATES = {
    # AlphaX's c (eq. 1): the authors' code's Cp = 2 and four smaller values (the first probe's grid)
    "alphax": {
        f"alphax_c{c:g}".replace(".", "p"): {"name": "alphax", "exploration": c} for c in (2.0, 0.5, 0.1, 0.03, 0.01)
    },
    # BANANAS: the paper's text (UCB, one edit) and the released code's acquisition and edit counts
    "bananas": {
        f"bananas_{acq}_{edits}edit": {"name": "bananas", "acquisition": acq, "max_edits": edits}
        for acq, edits in (("ucb", 1), ("its", 1), ("ucb", 2), ("its", 2))
    },
}
TRIALS = {"alphax": 50, "bananas": 50}


def get_config(arg=None):
    method, _, benchmark = (arg or "alphax,analognas/baseline").partition(",")
    if method not in CANDIDATES or not benchmark:
        raise ValueError(
            f"configs/setting_choice.py:{arg}: the argument is '<method>,<benchmark>', method one of {list(CANDIDATES)}"
        )
    config = default.get_config()
    config.benchmark = benchmark
    config.seed = CHOICE_SEED
    config.num_trials = TRIALS[method]
    config.searchers = searcher_configs(**CANDIDATES[method])
    return config
