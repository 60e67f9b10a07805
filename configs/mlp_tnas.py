"""TNAS with a dataset encoder over raw data samples (Shala, Elsken, Hutter & Grabocka, 2023, Section 3.1),
leave one task out over the real-training MLP tasks (``spaces.benchmarks.mlp_training``: the 10
hyperparameters of ``spaces.hpo.mlp_space``, 4.1M strings). The argument names the target (diabetes,
boston or naval); the other two are the source tasks, trained on 2,000 sampled configurations each during
meta-training (36-44 s on an idle 2-core CPU with a warm compilation cache, about 2 minutes cold):

    python -m scripts.meta_train --config configs/mlp_tnas.py:diabetes --workdir /tmp/nasjax_tnas/mlp_diabetes
    python -m scripts.train --config configs/mlp_tnas.py:diabetes --workdir /tmp/tnas_mlp_diabetes

phi reads ``data_rows`` = 64 training rows of each task (a fixed draw of the target's at meta-test), each
column a set of (x, y) pairs, the columns pooled by a second set transformer (``surrogates.set_encoder``).
The dataset-encoder ablation: ``<target>,observations`` (phi over the observed (one-hot, score) pairs, as
on the tabular suites) and ``<target>,no_phi`` (no phi), each meta-trained into its own folder:

    python -m scripts.meta_train --config configs/mlp_tnas.py:diabetes,observations \
        --workdir /tmp/nasjax_tnas/mlp_diabetes_observations
    python -m scripts.train --config configs/mlp_tnas.py:diabetes,observations --workdir /tmp/tnas_mlp_diabetes_obs

Searchers: ``tnas`` (data phi, top-5 source design), ``tnas_random_init``, ``tnas_no_meta``, ``gp_bo``,
regularized evolution and random search (variants: ``tnas_observations`` / ``tnas_no_phi`` only). Scores
are -RMSE on the validation part of split 0; reports show the test RMSE of the incumbent. 100 queries,
10 seeds (a seed is 100 real trainings per searcher).
"""

from configs import default
from configs.nb201_tnas import META_ROOT, leave_one_out, model_config
from nas.experiment.config import searcher_configs

TARGETS = ("diabetes", "boston", "naval")
NUM_FEATURES = 49  # one-hot length of spaces.hpo.mlp_space
VARIANTS = ("", "observations", "no_phi")


def get_config(arg=None):
    target, _, variant = (arg or "diabetes").partition(",")
    if variant not in VARIANTS:
        raise ValueError(f"variant {variant!r}: choose one of {VARIANTS[1:]} (e.g. diabetes,observations)")
    folder = f"{META_ROOT}/mlp_{target}" + (f"_{variant}" if variant else "")
    model = model_config("mlp", NUM_FEATURES)
    model.dataset_input = "observations" if variant == "observations" else "data"
    model.use_dataset_encoder = variant != "no_phi"
    config = leave_one_out("mlp", TARGETS, target, model, folder)
    config.meta.num_strings = 2000  # real trainings per source task
    config.meta.failed_scores = "worst"  # a diverged training scores as its task's worst
    params = f"{folder}/tnas_params.npz"
    tnas = {"name": "tnas", "params_file": params, "task_data": f"mlp/{target}"}
    if variant:
        config.searchers = searcher_configs(**{f"tnas_{variant}": tnas})
        return config
    keep = ("tnas_no_meta", "tnas_random_init", "gp_bo")
    searchers = {k: v for k, v in config.searchers.to_dict().items() if k in keep}
    config.searchers = searcher_configs(
        tnas=tnas,
        **searchers,
        regularized_evolution=default.BASELINES["regularized_evolution"],
        random_search=default.BASELINES["random_search"],
    )
    config.searchers.tnas_random_init.task_data = f"mlp/{target}"
    return config
