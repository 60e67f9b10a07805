"""Objectives that worker processes import (tests/test_tuner_workers.py): nothing here imports JAX, so a fresh
worker starts in a fraction of a second."""

import os
import signal

from nas.host.trials import TrialPruned


def pruned_training(trial):
    """Reports a learning curve at 1, 2, 4, 8 and stops when pruned; trial 1's worker SIGKILLs itself once (a
    marker file next to the trials' checkpoint folders), trial 3's worker always exits (``os._exit``)."""
    folder = os.path.dirname(trial.checkpoint_dir)
    if trial.number == 1 and not os.path.exists(os.path.join(folder, "killed_once")):
        open(os.path.join(folder, "killed_once"), "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    if trial.number == 3:
        os._exit(7)
    final = trial.params["lr"] * 10 + trial.params["depth"]
    for step in (1, 2, 4, 8):
        trial.report(final * step / 8, step)
        if trial.should_prune():
            raise TrialPruned()
    return final


def mf_training(trial):
    """A score that grows with the budget and depends on the configuration; trial 2's worker exits on its first
    try (a marker in its checkpoint folder)."""
    if trial.number == 2 and not os.path.exists(os.path.join(trial.checkpoint_dir, "tried")):
        open(os.path.join(trial.checkpoint_dir, "tried"), "w").close()
        os._exit(3)
    trial.report(0.0, step=trial.budget)
    a, b, c = (int(x) for x in trial.tokens)
    return (7 * a + 3 * b + c) % 11 + trial.budget / 10
