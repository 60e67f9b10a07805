"""Optuna's plots of real nasjax studies (docs/tutorials/integrations.md): an MLP trained on sklearn's digits.

    python -m scripts.figures.optuna_plots --out=docs/images --workdir=/tmp/optuna_plots

Two studies of ``sklearn.neural_network.MLPClassifier`` on the digits (1,797 8x8 images; 80 % to train, 20 %
to validate), trained one epoch at a time with ``partial_fit``:

- **pruned**: regularized evolution over the learning rate (log), the L2 penalty (log), the hidden width
  (an integer, log) and the activation, minimizing the validation error, with ASHA pruning at epochs 1, 3,
  9 and 27 (``pruner="asha"``). The study is mirrored live into ``<workdir>/digits_optuna.db``
  (``nas.adapters.optuna_mirror.OptunaMirror``; ``optuna-dashboard sqlite:///<workdir>/digits_optuna.db``
  shows it while it runs) and copied with ``study.to_optuna()`` for ``plot_optimization_history`` and
  ``plot_intermediate_values``;
- **two objectives**: NSGA-II over the same space at 9 epochs, minimizing the validation error and the
  number of weights, for ``plot_pareto_front`` and ``plot_param_importances`` (of the validation error:
  Optuna reads importances from complete trials, and every trial of this study completes, where ASHA
  stops most trials of the first early).

Writes ``optuna_history.png``, ``optuna_intermediate.png``, ``optuna_importances.png`` and
``optuna_pareto.png`` into ``--out``, and with ``--dashboard`` ``optuna_dashboard.png``: optuna-dashboard
on the mirrored study (``nas.adapters.optuna_dashboard``) as headless Chromium shows it. On a 2-core CPU
it takes about a minute and a half (the searchers compile in a few seconds; the trainings are the rest).
"""

from __future__ import annotations

import os
import warnings

import numpy as np
from absl import flags

from nas.experiment import cli
from spaces.files import MissingPackageError, save_figure

_OUT = flags.DEFINE_string("out", "docs/images", "folder the PNGs are written to")
_WORKDIR = flags.DEFINE_string("workdir", "/tmp/optuna_plots", "folder of the study files (a new one each run)")
_TRIALS = flags.DEFINE_integer("trials", 40, "trials of the pruned study")
_SEED = flags.DEFINE_integer("seed", 0, "the searchers' seed")
_DASHBOARD = flags.DEFINE_bool("dashboard", False, "also optuna_dashboard.png: optuna-dashboard on the mirrored "
                               "study, as headless Chromium shows it (needs optuna-dashboard and chromium)")

EPOCHS = (1, 3, 9, 27)  # ASHA's rungs, in epochs


def digits():
    """(x_train, y_train, x_valid, y_valid): sklearn's digits scaled to [0, 1], split 80/20 once."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    x, y = load_digits(return_X_y=True)
    x_train, x_valid, y_train, y_valid = train_test_split(x / 16.0, y, test_size=0.2, random_state=0, stratify=y)
    return x_train, y_train, x_valid, y_valid


def space():
    from spaces.params import Float, Int

    return {"lr": Float(1e-4, 1e-1, log=True), "alpha": Float(1e-6, 1e-2, log=True), "width": Int(8, 256, log=True),
            "activation": ["relu", "tanh", "logistic"]}  # fmt: skip


def model(p):
    from sklearn.neural_network import MLPClassifier

    return MLPClassifier(hidden_layer_sizes=(p["width"],), activation=p["activation"], learning_rate_init=p["lr"],
                         alpha=p["alpha"], batch_size=64, random_state=0)  # fmt: skip


def train(p, data, epochs, trial=None):
    """The validation error after each epoch (reported to ``trial``, which may stop it); the last one."""
    from nas.host.trials import TrialPruned

    x, y, xv, yv = data
    net, classes = model(p), np.unique(y)
    error = 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn's ConvergenceWarning for one epoch of partial_fit
        for epoch in range(1, epochs + 1):
            net.partial_fit(x, y, classes=classes)
            error = float(1.0 - net.score(xv, yv))
            if trial is not None:
                trial.report(error, epoch)
                if trial.should_prune():
                    raise TrialPruned()
    return error, net


def pruned_study(data, workdir: str):
    from nas.adapters.optuna_mirror import OptunaMirror
    from nas.host.study import Study

    mirror = OptunaMirror(os.path.join(workdir, "digits.jsonl"), f"sqlite:///{workdir}/digits_optuna.db",
                          study_name="digits")  # fmt: skip
    study = Study(space(), "regularized_evolution", direction="minimize", seed=_SEED.value,
                  max_trials=_TRIALS.value, pruner="asha", fidelities=list(EPOCHS), population_size=8,
                  tournament_size=3, storage=mirror)  # fmt: skip
    study.optimize(lambda trial: train(trial.params, data, EPOCHS[-1], trial)[0], n_trials=_TRIALS.value)
    study.close()
    return study


def pareto_study(data):
    from nas.host.study import Study

    def objective(trial):
        error, net = train(trial.params, data, 9)
        return [error, float(sum(w.size for w in net.coefs_) + sum(b.size for b in net.intercepts_))]

    study = Study(space(), "nsga2", directions=["minimize", "minimize"], seed=_SEED.value, max_trials=24,
                  population_size=8)  # fmt: skip
    return study.optimize(objective)


def main(argv):
    del argv
    try:
        import matplotlib

        matplotlib.use("Agg")
        import optuna
        from optuna.visualization import matplotlib as plots
    except ImportError as e:
        raise MissingPackageError(f"the plots need Optuna and matplotlib: pip install optuna matplotlib ({e})") from e
    os.makedirs(_WORKDIR.value, exist_ok=True)
    for name in ("digits.jsonl", "digits_optuna.db"):  # a new study each run
        if os.path.exists(os.path.join(_WORKDIR.value, name)):
            os.remove(os.path.join(_WORKDIR.value, name))
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)  # the matplotlib plots are marked so
    warnings.filterwarnings("ignore", "PedAnovaImportanceEvaluator computes")  # low errors are what we want
    data = digits()
    study = pruned_study(data, _WORKDIR.value).to_optuna()
    states = [t.state.name for t in study.trials]
    print(f"pruned study: {len(states)} trials, {states.count('COMPLETE')} complete, {states.count('PRUNED')} "
          f"pruned; best validation error {study.best_value:.4f} with {study.best_params}")  # fmt: skip
    print(f"mirrored live: optuna-dashboard sqlite:///{_WORKDIR.value}/digits_optuna.db")
    two = pareto_study(data).to_optuna()
    print(f"two objectives: {len(two.best_trials)} trials on the Pareto front of {len(two.trials)}")
    figures = {"optuna_history.png": plots.plot_optimization_history(study),
               "optuna_intermediate.png": plots.plot_intermediate_values(study),
               "optuna_importances.png": plots.plot_param_importances(two, target=lambda t: t.values[0],
                                                                      target_name="validation error"),
               "optuna_pareto.png": plots.plot_pareto_front(two, target_names=["validation error", "weights"])}
    for name, ax in figures.items():
        fig = ax.figure
        fig.set_size_inches(6.4, 4.2)
        if name == "optuna_intermediate.png" and ax.get_legend() is not None:
            ax.get_legend().remove()  # one line per trial: the legend would cover the plot
        path = os.path.join(_OUT.value, name)
        save_figure(fig, path, dpi=90)
        print(f"wrote {path} ({os.path.getsize(path) // 1024} KB)")
    if _DASHBOARD.value:
        from nas.adapters.optuna_dashboard import Dashboard, screenshot

        with Dashboard(f"sqlite:///{_WORKDIR.value}/digits_optuna.db") as board:
            study_id = board.api("/api/studies")["study_summaries"][0]["study_id"]
            path = os.path.join(_OUT.value, "optuna_dashboard.png")
            screenshot(f"{board.url}/dashboard/studies/{study_id}", path)
        print(f"wrote {path} ({os.path.getsize(path) // 1024} KB)")


if __name__ == "__main__":
    cli.run(main)
