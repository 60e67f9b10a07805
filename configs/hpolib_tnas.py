"""TNAS on HPOLib FCNet, leave one task out (Shala, Elsken, Hutter & Grabocka, 2023, applied to a flat
hyperparameter space). The argument names the target (naval_propulsion, parkinsons_telemonitoring,
protein_structure or slice_localization); the other three tables are the source tasks:

    python -m scripts.meta_train --config configs/hpolib_tnas.py:protein_structure \
        --workdir /tmp/nasjax_tnas/hpolib_protein_structure
    python -m scripts.train --config configs/hpolib_tnas.py:protein_structure --workdir /tmp/tnas_hpolib_protein

The deep kernel's psi is an MLP on the 34-long one-hot encoding of the 9 hyperparameters (there is no
graph); phi reads the target's (one-hot, score) observations; TNAS scores all 62,208 configurations every
step. Scores are -log(validation MSE), the seed mean of the 4 seeds ("mean" protocol); there is no test
split, so reports show validation MSE. Searchers as ``configs/nb201_tnas.py``.
"""

from configs.nb201_tnas import META_ROOT, leave_one_out, model_config

TARGETS = ("naval_propulsion", "parkinsons_telemonitoring", "protein_structure", "slice_localization")
NUM_FEATURES = 34  # one-hot length: 2 + 2 + 4 + 3 + 3 + 6 + 2 + 6 + 6 values (spaces.benchmarks.hpolib)


def get_config(arg=None):
    target = arg or "protein_structure"
    return leave_one_out("hpolib", TARGETS, target, model_config("mlp", NUM_FEATURES), f"{META_ROOT}/hpolib_{target}")
