"""Host-side trainings with checkpoints (spaces/benchmarks/mlp_resume.py, spaces/language/resumable.py,
spaces/training_state.py): a promotion that resumes its parent's checkpoint ends exactly, bit for bit, where
training to its budget in one go ends; a restarted trial resumes its own checkpoint; pruning stops at a report."""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from spaces.benchmarks import uci
from spaces.benchmarks.mlp_resume import train_mlp
from spaces.benchmarks.mlp_training import MLPTraining
from spaces.hpo import HPOSpace, categorical
from spaces.training_state import FILE

pytest.importorskip("sklearn", reason="the MLP and language tasks read scikit-learn's bundled data")

SPACE = HPOSpace("resume_mlp", [categorical("activation", ["tanh", "relu"]), categorical("solver", ["adam", "sgd"])])
B1, B2 = 40, 90  # not multiples of the 50-step chunks: the resumed training starts inside a chunk


def leaves(folder):
    with np.load(os.path.join(folder, FILE)) as z:
        return {k: z[k] for k in z.files if k.startswith("leaf_")}


def assert_same_state(a, b):
    la, lb = leaves(a), leaves(b)
    assert la.keys() == lb.keys()
    for k in la:
        np.testing.assert_array_equal(la[k], lb[k], err_msg=k)


@pytest.mark.slow
def test_an_mlp_promotion_resumes_its_parent_bit_for_bit(tmp_path):
    data = uci.load_diabetes()
    objective = MLPTraining.build(data, SPACE, "resume_mlp", fidelities=(B1, B2), hidden_layer_size=16,
                                  learning_rate_init=0.01)  # fmt: skip
    config = {"activation": "tanh", "solver": "adam"}
    parent, child, whole = (str(tmp_path / n) for n in ("parent", "child", "whole"))
    low = train_mlp(objective, config, B1, checkpoint_dir=parent, seed=3)
    promoted = train_mlp(objective, config, B2, checkpoint_dir=child, resume_from=parent, seed=3)
    one_go = train_mlp(objective, config, B2, checkpoint_dir=whole, seed=3)
    assert (low["resumed_from"], promoted["resumed_from"], promoted["cost"], one_go["cost"]) == (0, B1, B2 - B1, B2)
    assert (promoted["valid"], promoted["test"]) == (one_go["valid"], one_go["test"]) and promoted["valid"] > -np.inf
    assert_same_state(child, whole)  # parameters, Adam's moments and step count: the same bits
    assert low["valid"] != one_go["valid"]
    # the compiled objective, queried with the same seed, scores this configuration identically
    res = jax.jit(objective.query)(jax.random.PRNGKey(3), jnp.asarray(SPACE.from_spec(config))[None],
                                   jnp.asarray([1], jnp.int32))  # fmt: skip
    assert float(res["valid"][0]) == one_go["valid"]
    # a restarted trial resumes its own checkpoint; reports every 25 steps, pruned at the second
    again = train_mlp(objective, config, B2, checkpoint_dir=whole, resume_from=parent, seed=3)
    assert again["resumed_from"] == B2 and again["cost"] == 0 and again["valid"] == one_go["valid"]
    seen = []
    cut = train_mlp(objective, config, B2, checkpoint_dir=str(tmp_path / "cut"), seed=3, report_every=25,
                    on_report=lambda step, value: seen.append((step, value)) or len(seen) == 2)  # fmt: skip
    assert [s for s, _ in seen] == [25, 50] and cut["pruned"] and cut["step"] == 50 and cut["cost"] == 50
    rest = train_mlp(objective, config, B2, checkpoint_dir=str(tmp_path / "cut"), seed=3)  # goes on from 50
    assert rest["resumed_from"] == 50 and rest["valid"] == one_go["valid"]
    other_seed = train_mlp(objective, config, B2, resume_from=parent, seed=4)  # another training: not resumed
    assert other_seed["resumed_from"] == 0


@pytest.mark.slow
def test_a_language_promotion_resumes_its_parent_bit_for_bit(tmp_path):
    from spaces.language.datasets import load
    from spaces.language.epoch_training import EpochTrainer
    from spaces.language.resumable import train_epochs
    from spaces.language.tasks import _flat_space
    from spaces.language.training import TrainConfig

    data = load("diabetes")
    space = _flat_space("diabetes_mlp")
    trainer = EpochTrainer(space, data, TrainConfig(epochs=3, batch_size=32, learning_rate=1e-3), (1, 3))
    config = space.to_spec(space.from_spec([1, 0.1, "relu", 16]))  # one layer; dropout: its masks must line up
    parent, child, whole = (str(tmp_path / n) for n in ("parent", "child", "whole"))
    low = train_epochs(trainer, config, 1, checkpoint_dir=parent, seed=2)
    promoted = train_epochs(trainer, config, 3, checkpoint_dir=child, resume_from=parent, seed=2)
    one_go = train_epochs(trainer, config, 3, checkpoint_dir=whole, seed=2)
    assert (promoted["resumed_from"], promoted["cost"]) == (1, 2)
    assert (promoted["valid"], promoted["test"]) == (one_go["valid"], one_go["test"]) != (low["valid"], low["test"])
    assert_same_state(child, whole)
    # the in-memory epoch trainer (what the multi-fidelity host loop runs) agrees
    tokens = space.from_spec(config)[None]
    res = trainer.evaluate(tokens, [2], [1], [-1])
    assert float(res["valid"][0]) == one_go["valid"] and np.isfinite(one_go["valid"])
