"""Multi-objective search: error against a metric (latency, model size, training time, parameters), 100 trials
x 150 queries. The argument names the benchmark and the metric (default: the benchmark's first):

    python -m scripts.train --config configs/multiobjective.py:nb201/cifar10 --workdir /tmp/mo \
        --config.test_data=../shared/data/nb201/nats_bench_test_acc.csv
    python -m scripts.train --config configs/multiobjective.py:nb201/cifar100,model_size --workdir /tmp/mo_size
    python -m scripts.train --config configs/multiobjective.py:hpolib/naval_propulsion --workdir /tmp/mo_naval
    python -m scripts.train --config configs/multiobjective.py:mlp/naval --workdir /tmp/mo_mlp

Searchers: NSGA-II, multi-objective regularized evolution, ParEGO's random scalarizations of local search
and BANANAS, random search (the floor) and, on NAS-Bench-201 with its 12-epoch table
(``config.fidelity_data``, found beside the repository), MO-ASHA (4 workers) on the compute axis. The
reports add the hypervolume gap to the table's true front at 25/50/100 % of the budget and
``pareto.png`` (docs/reference/multiobjective.md, docs/research/multiobjective.md).

``,peer`` adds Optuna's NSGA-II and multi-objective TPE and Syne Tune's MO-REA on the host (10 trials;
``pip install optuna`` and Syne Tune, requirements-dev.txt)::

    python -m scripts.train --config configs/multiobjective.py:nb201/cifar10,latency,peer --workdir /tmp/mo_peer \
        --config.test_data=../shared/data/nb201/nats_bench_test_acc.csv

``,constrained`` runs the single-objective searchers under a tight and a loose latency limit instead
(``searchers.<label>.constraints``, penalty mode; regularized evolution and local search also with the
filter; labels such as ``random_search_tight``, ``local_search_loose``, ``regularized_evolution_tight_filter``)
beside NSGA-II and MO-REA, and reports every searcher's incumbent under each limit::

    python -m scripts.train --config configs/multiobjective.py:nb201/cifar10,latency,constrained --workdir /tmp/mo_con \
        --config.test_data=../shared/data/nb201/nats_bench_test_acc.csv
"""

import os

import ml_collections

from configs import default
from nas.experiment.config import searcher_configs

FIDELITY_DATA = os.path.normpath(
    os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "nb201", "mini_nb201_12epoch.pd")
)
DEFAULT_METRIC = {"nb201": "latency", "hpolib": "train_time", "hpobench": "train_time", "mlp": "params"}
# latency limits (s): about 2 % and 10 % of each table's cells are feasible
LIMITS = {"nb201/cifar10": (0.0095, 0.0125), "nb201/cifar100": (0.009, 0.0115), "nb201/imagenet16": (0.0083, 0.0105)}

MULTI_OBJECTIVE = {
    "nsga2": {"name": "nsga2", "population_size": 20},
    "mo_regularized_evolution": {"name": "mo_regularized_evolution", "population_size": 30, "tournament_size": 10},
    "parego_local_search": {"name": "parego_local_search", "num_init": 10},
    "parego_bananas": {"name": "parego_bananas"},
}
PEERS = {
    "optuna_nsga2": {"name": "optuna_mo", "sampler": "nsga2", "population_size": 20},
    "optuna_tpe": {"name": "optuna_mo", "sampler": "tpe"},
    "syne_tune_morea": {"name": "syne_tune_morea", "population_size": 30, "sample_size": 10},
}


def constrained_entries(limits) -> dict:
    """Random search, evolution and local search under each limit (penalty), evolution and local search
    also with the filter at the tight one, labelled ``<searcher>_tight``, ``<searcher>_loose`` and
    ``<searcher>_tight_filter`` (underscores: a label is a field name in a ``--config.searchers.<label>``
    override)."""
    out = {}
    for i, limit in enumerate(limits):
        cons = f"latency<={limit:g}"
        for label, entry in default.BASELINES.items():
            out[f"{label}_{'tight' if i == 0 else 'loose'}"] = {**entry, "constraints": cons}
        if i == 0:
            for label in ("regularized_evolution", "local_search"):
                out[f"{label}_tight_filter"] = {**default.BASELINES[label], "constraints": cons,
                                                "constraint_mode": "filter"}  # fmt: skip
    return out


def get_config(arg=None):
    config = ml_collections.ConfigDict(default.get_config().to_dict())
    parts = [p for p in (arg or "nb201/cifar10").split(",") if p]
    benchmark, rest = parts[0], parts[1:]
    mode = rest.pop() if rest and rest[-1] in ("peer", "constrained") else ""
    family = benchmark.split("/")[0]
    if family not in DEFAULT_METRIC or len(rest) > 1:
        raise ValueError(
            f"configs/multiobjective.py:{arg}: the argument is '<benchmark>[,<metric>][,peer|constrained]' with a "
            f"benchmark of {sorted(DEFAULT_METRIC)}"
        )
    metric = rest[0] if rest else DEFAULT_METRIC[family]
    config.benchmark = benchmark
    config.metrics = (metric,)
    config.num_trials = 100
    config.max_queries = 150
    with_mf = family == "nb201" and os.path.exists(FIDELITY_DATA) and mode == ""
    config.fidelity_data = FIDELITY_DATA if with_mf else ""
    searchers = {**MULTI_OBJECTIVE}
    if with_mf:
        searchers["mo_asha"] = {"name": "mo_asha", "workers": 4}
    if mode == "peer":
        config.num_trials = 10
        searchers = {**PEERS}
    elif mode == "constrained":
        if benchmark not in LIMITS or metric != "latency":
            raise ValueError(f"configs/multiobjective.py:{arg}: constrained runs are set for NB201 latency only")
        searchers = {k: MULTI_OBJECTIVE[k] for k in ("nsga2", "mo_regularized_evolution")}
        searchers.update(constrained_entries(LIMITS[benchmark]))
    config.searchers = searcher_configs(**searchers, random_search={"name": "random_search"})
    return config
