"""TNAS on NAS-Bench-201, leave one task out (Shala, Elsken, Hutter & Grabocka, 2023). The argument names
the target (cifar10, cifar100 or imagenet16); the other two tables are the source tasks. First meta-train
on the sources, then search the target with the meta-learned kernel against the baselines:

    python -m scripts.meta_train --config configs/nb201_tnas.py:cifar10 --workdir /tmp/nasjax_tnas/cifar10
    python -m scripts.train --config configs/nb201_tnas.py:cifar10 --workdir /tmp/tnas_c10 \
        --config.test_data=../shared/data/nb201/nats_bench_test_acc.csv

(the same for cifar100 and imagenet16). The argument ``<target>,<variant>`` is an ablation or a paper
switch (``VARIANTS``), meta-trained into its own folder and run as ``tnas_<variant>`` (top-5 design) and
``tnas_<variant>_random_init``: ``no_phi`` the dataset-encoder ablation "none" (no phi: the kernel sees
``xi(psi(x))``), ``no_graph`` the paper's "no graph encoder" ablation (psi is the adjacency-matrix
encoding), ``sgd`` REPTILE's inner optimizer as the paper's SGD (at ``SGD_INNER_LR``; ``sgd_lr<x>`` at
the candidate rates of its choice: ``sgd_lr0p001``, ``sgd_lr0p01``, ``sgd_lr0p1``, ``sgd_lr1``), ``pair``
the paper's mini-batches of (task, architecture) pairs:

    python -m scripts.meta_train --config configs/nb201_tnas.py:cifar10,no_phi --workdir /tmp/nasjax_tnas/cifar10_no_phi
    python -m scripts.train --config configs/nb201_tnas.py:cifar10,no_phi --workdir /tmp/tnas_c10_no_phi \
        --config.test_data=../shared/data/nb201/nats_bench_test_acc.csv

``scripts.train`` reads the parameters from
``/tmp/nasjax_tnas/<target>/tnas_params.npz`` (``--config.searchers.tnas.params_file=...`` to change it).
Searchers: ``tnas`` (meta-learned kernel, top-5 source design, EI), ``tnas_no_meta`` (nothing meta-learned:
a randomly initialized deep kernel and a random initial design), ``tnas_random_init`` (meta-learned
kernel, random initial design), ``gp_bo`` (Matern-5/2 GP from scratch with UCB, as the paper's GP
baseline, in batches of 5), ``bananas`` (the released code's defaults), regularized evolution, local search
and random search (``configs/default.py``). ``--config.only=tnas,gp_bo`` runs a subset.
"""

import dataclasses

import ml_collections
import numpy as np

from configs import default
from nas.experiment.config import searcher_configs
from surrogates.deep_kernel import DeepKernelConfig

TARGETS = ("cifar10", "cifar100", "imagenet16")
META_ROOT = "/tmp/nasjax_tnas"  # meta_train --workdir default location used by the searcher entries


def model_config(arch_encoder: str = "dag", num_features: int = 30, dag: str = "nb201") -> ml_collections.ConfigDict:
    fields = dataclasses.asdict(DeepKernelConfig(arch_encoder=arch_encoder, num_features=num_features, dag=dag))
    fields["xi_hidden"] = list(fields["xi_hidden"])
    return ml_collections.ConfigDict(fields)


def meta_config() -> ml_collections.ConfigDict:
    """REPTILE (Algorithm 1) and meta-training settings shared by the TNAS configs."""
    return ml_collections.ConfigDict(
        {
            "seed": 0,
            "outer_steps": 300,
            "chunk_steps": 50,
            "inner_steps": 5,
            "batch_size": 64,
            "inner_lr": 1e-3,
            "inner_optimizer": "adam",
            "outer_lr": 0.5,
            "set_min": 5,
            "set_max": 64,
            "task_sampling": "task",
            "init_design": 5,
        }
    )


# REPTILE's inner SGD (the paper's optimizer; its learning rate was tuned by BOHB and is not given), chosen among
# SGD_INNER_LRS (the ``sgd_lr<x>`` variants) on the target cifar100, where no SGD variant is reported, by the
# validation error of ``tnas_sgd_lr<x>_random_init`` (root seed 1, 20 trials): 1e-1 (docs/research/fidelity.md)
SGD_INNER_LRS = (1e-3, 1e-2, 1e-1, 1.0)
SGD_INNER_LR = 1e-1


def sgd_variant(lr: float) -> str:
    """``sgd_lr0p01`` for inner learning rate 0.01: the decimal digits with ``p`` for the point, so that the
    name is a config key and ``--config.searchers.tnas_sgd_lr0p01_random_init.<field>`` works on the command
    line (no dot, no minus sign)."""
    return "sgd_lr" + np.format_float_positional(lr, trim="-").replace(".", "p")


# <target>,<variant>: (config.model changes, config.meta changes); meta-trained into <META_ROOT>/<target>_<variant>
VARIANTS = {
    "no_phi": ({"use_dataset_encoder": False}, {}),
    "no_graph": ({"arch_encoder": "matrix"}, {}),
    "sgd": ({}, {"inner_optimizer": "sgd", "inner_lr": SGD_INNER_LR}),
    "pair": ({}, {"task_sampling": "pair"}),
    **{sgd_variant(lr): ({}, {"inner_optimizer": "sgd", "inner_lr": lr}) for lr in SGD_INNER_LRS},
}


def get_config(arg=None):
    target, _, variant = (arg or "cifar10").partition(",")
    if variant and variant not in VARIANTS:
        raise ValueError(f"variant {variant!r}: choose one of {sorted(VARIANTS)} (e.g. cifar10,no_phi)")
    config = leave_one_out("nb201", TARGETS, target, model_config(), f"{META_ROOT}/{target}")
    if variant:
        apply_variant(config, variant, f"{META_ROOT}/{target}_{variant}")
    return config


def apply_variant(config, variant: str, meta_dir: str) -> None:
    """``config`` with ``VARIANTS[variant]`` applied, running ``tnas_<variant>`` and its random-design twin."""
    model, meta = VARIANTS[variant]
    config.model.update(model)
    config.meta.update(meta)
    params = f"{meta_dir}/tnas_params.npz"
    config.searchers = searcher_configs(
        **{
            f"tnas_{variant}": {"name": "tnas", "params_file": params},
            f"tnas_{variant}_random_init": {"name": "tnas", "params_file": params, "initial_design": "random"},
        }
    )


def leave_one_out(prefix: str, targets, target: str, model, meta_dir: str) -> ml_collections.ConfigDict:
    """The config of one leave-one-out target of the suite ``<prefix>/<t> for t in targets``: meta-training
    settings, the deep kernel ``model``, the comparison's searchers reading ``<meta_dir>/tnas_params.npz``;
    10 seeds, 100 queries."""
    if target not in targets:
        raise ValueError(f"target {target!r}: choose one of {tuple(targets)}")
    config = default.get_config()
    config.benchmark = f"{prefix}/{target}"
    config.num_trials = 10
    config.max_queries = 100
    config.suite = ",".join(f"{prefix}/{t}" for t in targets)
    config.meta = meta_config()
    config.model = model
    config.searchers = searcher_configs(**comparison(f"{meta_dir}/tnas_params.npz"))
    return config


def comparison(params: str) -> dict:
    """The searchers of a TNAS leave-one-out comparison (Section 4): TNAS, its two ablations and the baselines
    (GP-BO, BANANAS, regularized evolution, local search, random search), 5 initial random queries each."""
    return {
        "tnas": {"name": "tnas", "params_file": params},
        "tnas_no_meta": {"name": "tnas", "params_file": ""},
        "tnas_random_init": {"name": "tnas", "params_file": params, "initial_design": "random"},
        "gp_bo": {
            "name": "gp_bo",
            "batch_size": 5,
            "num_init": 5,
            "gp_steps": 50,
            "kernel": "matern52",
            "acquisition": "ucb",
            "acq_opt": "random",
            "num_random": 1000,
        },
        "bananas": {"name": "bananas", "acquisition": "its", "max_edits": 2},
        **default.BASELINES,
    }
