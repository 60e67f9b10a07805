"""nasjax: neural architecture search and hyperparameter optimization as array programs.

``import nas`` is the public API; every name in ``__all__`` is reachable as ``nas.<name>``::

    import nas

    study = nas.create_study({"lr": nas.Float(1e-4, 1e-1, log=True), "layers": nas.Int(1, 4)},
                             searcher="regularized_evolution", direction="minimize", max_trials=20,
                             population_size=6, tournament_size=3)
    study.optimize(lambda trial: (trial.params["lr"] - 0.01) ** 2 + 0.01 * trial.params["layers"])

    bench = nas.make_benchmark("nb201/cifar10")                 # a table as device arrays
    searcher = nas.make_searcher("random_search", bench.space, max_queries=100)
    keys = jax.random.split(jax.random.PRNGKey(0), 500)         # 500 seeds, one compiled call
    history = jax.jit(jax.vmap(nas.make_search(searcher), in_axes=(0, None)))(keys, bench)

The names are imported when first used (``nas.Study`` imports the tuner, ``nas.make_search`` the
engine), so ``import nas`` itself costs almost nothing and imports no JAX. The deeper modules are
the implementation: ``nas.host`` (the tuner: Study, trials, storage, workers, pruners), ``nas.core``
and ``nas.searchers`` (the searcher contract, options, registry and the built-in searchers),
``nas.engine`` (the compiled many-seed runs), ``nas.experiment`` (configs to runs, workdirs,
reports, peers), ``nas.adapters`` (Optuna and Ray Tune). A module that moves keeps its old import
path for a release, with a ``DeprecationWarning`` naming the new one (``spaces.moved``).
"""

from __future__ import annotations

import importlib

import spaces as _spaces  # installs the finder of moved modules' old paths (spaces.moved)

__version__ = "0.3.0.dev0"

# public name -> "module:attribute"; a module that moved is followed to its new path (spaces.moved)
_EXPORTS: dict[str, str] = {
    # the tuner (Optuna's names)
    "create_study": "nas.host.study:create_study",
    "load_study": "nas.host.study:load_study",
    "Study": "nas.host.study:Study",
    "Trial": "nas.host.trials:Trial",
    "TrialPruned": "nas.host.trials:TrialPruned",
    "NoTrialNow": "nas.host.trials:NoTrialNow",
    "BudgetSpent": "nas.host.trials:BudgetSpent",
    "StorageError": "nas.host.storage:StorageError",
    # hyperparameter declarations
    "Float": "spaces.params:Float",
    "Int": "spaces.params:Int",
    "Categorical": "spaces.params:Categorical",
    # pruners
    "Pruner": "nas.host.pruning:Pruner",
    "ASHAPruner": "nas.host.pruning:ASHAPruner",
    "HyperbandPruner": "nas.host.pruning:HyperbandPruner",
    # searchers: the registry, the contract for writing one
    "available_searchers": "nas.searchers:available_searchers",
    "make_searcher": "nas.searchers:make_searcher",
    "make_options": "nas.searchers:make_options",
    "searcher_options": "nas.searchers:searcher_options",
    "register": "nas.core.registry:register",
    "Searcher": "nas.core.contract:Searcher",
    "SearcherOptions": "nas.core.options:SearcherOptions",
    # runs: one seed as a pure function, many seeds in compiled chunks, a config's whole experiment
    "make_search": "nas.engine.runner:make_search",
    "make_run": "nas.engine.runner:make_run",
    "History": "nas.engine.runner:History",
    "run_chunked": "nas.engine.chunked_loop:run_chunked",
    "run_experiment": "nas.experiment.run:run_experiment",
    # benchmarks
    "available_benchmarks": "spaces.benchmarks.registry:available_benchmarks",
    "make_benchmark": "spaces.benchmarks.registry:make_benchmark",
    "register_benchmark": "spaces.benchmarks.registry:register_benchmark",
    "TabularBenchmark": "spaces.benchmarks.tabular:TabularBenchmark",
}

__all__ = sorted(_EXPORTS)


def _resolve(name: str):
    module, _, attribute = _EXPORTS[name].partition(":")
    value = importlib.import_module(_spaces.moved.new_path(module))
    for part in attribute.split("."):
        value = getattr(value, part)
    return value


def __getattr__(name: str):
    if name in _EXPORTS:
        value = _resolve(name)
        globals()[name] = value  # resolved once
        return value
    raise AttributeError(f"module 'nas' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
