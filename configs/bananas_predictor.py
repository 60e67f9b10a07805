"""Predictor quality (BANANAS Table 1 / Figure 3): MLP-ensemble MAE, adjacency vs path encoding.

    python -m scripts.experiments.predictor_quality --config configs/bananas_predictor.py:nb201 \
        --out /tmp/pred_nb201.json
    python -m scripts.experiments.predictor_quality --config configs/bananas_predictor.py:nb101 \
        --config.data_path=../shared/data/nb101/data-1k.json --out /tmp/pred_nb101.json

Each trial draws a training set of ``n`` architectures and a disjoint held-out set uniformly from
the benchmark's table, fits the 5-member ensemble (10 layers x 20, Adam lr 0.01, MAE loss, batch
32, 150 epochs as in the paper's code) on validation accuracy (%), and reports the mean absolute
error of the ensemble mean on the training set and on the held-out set (percentage points).
``nb101``: the 1,000 real cells of nasbench-vis' data-1k.json (108-epoch validation of one run;
pass its path as ``--config.data_path``), held out: 500 cells (all remaining ones when n = 500).
``nb201``: cifar10-valid seed-mean validation, all 15,625 cells, held out: 1,000.
"""

import ml_collections


def get_config(arg=None):
    arg = arg or "nb201"
    config = ml_collections.ConfigDict()
    config.benchmark = {"nb201": "nb201/cifar10", "nb101": "nb101/data1k"}[arg]
    config.data_path = ""
    config.train_sizes = (20, 100, 500)
    config.test_size = 500 if arg == "nb101" else 1000
    config.encodings = ("adjacency", "path")
    config.num_trials = 10
    config.seed = 0
    config.mlp = ml_collections.ConfigDict(
        {"num_members": 5, "num_layers": 10, "width": 20, "learning_rate": 0.01, "epochs": 150, "batch_size": 32}
    )
    return config
