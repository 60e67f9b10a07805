"""The live trainings of the tuner comparison (``scripts/experiments/tuner_comparison.py``), shared by every tool.

Two tasks, each a space, a ladder of budgets and one training function that continues a checkpoint:

- ``naval``: ``mlp/naval`` (``spaces.benchmarks.mlp_training``: the Section VIII MLP space without
  ``max_iter``, 9 hyperparameters, two of them conditional on the solver), optimizer steps as the budget,
  ``100, 300, 900, 2700, 8100`` (a ladder of ratio 3: every tool's rungs sit on it); the searched value is
  the validation RMSE, the reported one the test RMSE (the target's units).
- ``digits``: ``genetic_digits`` (``spaces.language.tasks``: the Genetic CNN space of the language paper's
  Section 7.2, 9 binary tokens, one compiled program), epochs as the budget, ``1, 3, 9``; searched: the
  validation error (1 - accuracy), reported: the test error.

``train(task, tokens, budget, checkpoint_dir, resume_from)`` trains from the latest checkpoint in
``checkpoint_dir`` (the trial's own) or ``resume_from`` (a promotion's parent) to ``budget``
(``spaces.benchmarks.mlp_resume.train_mlp``, ``spaces.language.resumable.train_epochs``: bit for bit
the training in one go) and appends the segment to the run's log: ``{"t": end time (s since the
epoch), "cost": steps or epochs trained now, "budget", "valid", "test", "config"}``. Each process writes
its own file (``segments_<pid>.jsonl``), so processes never interleave. Every configuration trains
with seed 0: the objective is deterministic, the searchers' seeds alone differ between repetitions.
"""

from __future__ import annotations

import functools
import json
import os
import time

import numpy as np

_SHARED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared", "data")
NAVAL_DATA = os.environ.get("NASJAX_NAVAL", os.path.normpath(os.path.join(_SHARED, "uci", "naval-propulsion-plant")))
TASKS = {
    "naval": {"fidelities": (100, 300, 900, 2700, 8100), "unit": "iterations", "error": "test RMSE"},
    "digits": {"fidelities": (1, 3, 9), "unit": "epochs", "error": "test error"},
}


@functools.cache
def load(task: str):
    """The objective (``mlp/naval``'s ``MLPTraining``) or the language task, once per process."""
    fidelities = TASKS[task]["fidelities"]
    if task == "naval":
        from spaces.benchmarks.registry import make_benchmark

        return make_benchmark("mlp/naval", fidelities=fidelities, data_path=NAVAL_DATA)
    from spaces.language.tasks import make_task

    return make_task("genetic_digits", fidelities=fidelities)


def space(task: str):
    """The searchers' space (``Study(space, ...)``)."""
    return load(task).space


def parameters(task: str) -> list[tuple[str, list, tuple]]:
    """``(name, values, when)`` for the peers' declarations: ``when`` is ``(parent, allowed values)`` or ()."""
    s = load(task).space
    if task == "naval":
        return [(h.name, list(h.values), tuple(h.when[0]) if h.when else ()) for h in s.hyperparameters]
    return [(f"t{i}", list(range(int(c))), ()) for i, c in enumerate(s.cardinalities)]


def active(task: str, config: dict) -> dict:
    """The parameters of ``config`` whose condition holds (a peer may sample inactive ones too)."""
    out = {}
    for name, _, when in parameters(task):
        if name in config and (not when or config[when[0]] in when[1]):
            out[name] = config[name]
    return out


def tokens_of(task: str, config: dict) -> np.ndarray:
    """Tokens of a configuration: a peer's ``{name: value}`` (inactive parameters are dropped) or the space's spec."""
    s = load(task).space
    if "values" in config and "space" in config:  # the language space's own spec
        return np.asarray(config["values"], np.int32)
    if task == "naval":
        return np.asarray(s.from_spec(active(task, config)), np.int32)
    return np.asarray([config[f"t{i}"] for i in range(s.num_tokens)], np.int32)


def train(task: str, tokens, budget: float, checkpoint_dir: str, resume_from: str | None, log_dir: str) -> dict:
    """Trains to ``budget`` from the latest checkpoint; ``{"valid", "test", "cost"}`` (errors, lower is better)."""
    tokens = np.asarray(tokens, np.int32)
    if task == "naval":
        from spaces.benchmarks.mlp_resume import train_mlp

        res = train_mlp(load(task), tokens, int(budget), checkpoint_dir, resume_from, seed=0)
        valid, test = -res["valid"], -res["test"]  # RMSE (inf when the training diverged)
    else:
        from spaces.language.resumable import train_epochs

        res = train_epochs(load(task).trainer, tokens, int(budget), checkpoint_dir, resume_from, seed=0)
        valid, test = 1.0 - res["valid"], 1.0 - res["test"]
    out = {"valid": float(valid), "test": float(test), "cost": float(res["cost"])}
    record = {"t": time.time(), "budget": float(budget), "config": tokens.tolist(), **out}
    with open(os.path.join(log_dir, f"segments_{os.getpid()}.jsonl"), "a") as f:
        f.write(json.dumps(record) + "\n")
    return out


def read_segments(log_dir: str) -> list[dict]:
    """Every segment the run's processes logged, by end time."""
    rows = []
    for name in os.listdir(log_dir):
        if name.startswith("segments_") and name.endswith(".jsonl"):
            with open(os.path.join(log_dir, name)) as f:
                rows += [json.loads(line) for line in f if line.strip()]
    return sorted(rows, key=lambda r: r["t"])


def study_objective(task: str, log_dir: str, trial) -> float:
    """The objective of a ``Study``: trains ``trial`` to its budget, continuing its parent's checkpoint."""
    res = train(task, trial.tokens, trial.budget, trial.checkpoint_dir, trial.parent_checkpoint_dir, log_dir)
    return res["valid"]
