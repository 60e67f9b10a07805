"""TNAS on HPOBench's MLP tables, leave one task out (Shala, Elsken, Hutter & Grabocka, 2023, applied to a
flat hyperparameter space). The argument names the target, one of the 8 OpenML tasks (car, phoneme, vehicle,
australian, kc1, segment, blood_transfusion, credit_g); the other seven tables are the source tasks:

    python -m scripts.meta_train --config configs/hpobench_tnas.py:car --workdir /tmp/nasjax_tnas/hpobench_car
    python -m scripts.train --config configs/hpobench_tnas.py:car --workdir /tmp/tnas_hpobench_car

The deep kernel's psi is an MLP on the 43-long one-hot encoding of the 5 hyperparameters (alpha, batch size,
depth, initial learning rate, width); phi reads the target's (one-hot, score) observations; TNAS scores all
30,000 configurations every step. Scores are the validation balanced accuracy, the seed mean of the 5 seeds
("mean" protocol); there is no test split, so reports show validation error. Searchers as
``configs/nb201_tnas.py``.
"""

from configs.nb201_tnas import META_ROOT, leave_one_out, model_config

TARGETS = ("car", "phoneme", "vehicle", "australian", "kc1", "segment", "blood_transfusion", "credit_g")
NUM_FEATURES = 43  # one-hot length: 10 + 10 + 3 + 10 + 10 values (spaces.benchmarks.hpobench)


def get_config(arg=None):
    target = arg or "car"
    model = model_config("mlp", NUM_FEATURES)
    return leave_one_out("hpobench", TARGETS, target, model, f"{META_ROOT}/hpobench_{target}")
