"""Multi-fidelity searchers on a task's batch evaluator (nas/host/task_search.py, a thin use of the Study) and
the language's digits networks with epochs as the fidelity (spaces/language/epoch_training.py): the task loop
equals the compiled engine with one worker (the scripted searcher and toy table of test_multi_fidelity_engine),
and a promotion continues the lower fidelity's training exactly, paying only the epochs it adds."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nas.core.multi_fidelity import Job
from nas.engine.multi_fidelity_runner import make_mf_search
from nas.host.task_search import run_task_mf_search
from tests.test_multi_fidelity_engine import BUDGETS, Scripted, ScriptOptions, scripted, toy_table


def table_evaluator(table):
    """The toy table as a host objective; a continued evaluation spends its part of the time, as the engine charges."""
    query = jax.jit(lambda t, f: table.query(jax.random.PRNGKey(0), t, f))
    budgets = np.asarray(BUDGETS, np.float32)

    def evaluate(tokens, seeds, fidelity, parent):
        res = jax.tree.map(np.asarray, query(jnp.asarray(tokens), jnp.asarray(fidelity, jnp.int32)))
        if table.continues and parent[0] >= 0:
            res["cost"] = res["cost"] * (budgets[fidelity] - budgets[parent]) / budgets[fidelity]
        return res

    return evaluate


@pytest.mark.parametrize("continues, max_queries", [(False, 3), (True, 3), (True, 6)])
def test_the_task_loop_is_the_engine_with_one_worker(continues, max_queries):
    # a promotion that continues, a promotion that does not; a budget of 3 full trainings stops the script,
    # one of 6 outlasts it (then every ask has no job and the rows stay empty)
    script = ((1, 0, 0, -1), (1, 0, 2, 0), (2, 1, 1, -1), (0, 1, 2, -1), (3, 0, 2, -1), (3, 1, 0, -1))
    s = scripted(script, max_queries=max_queries)
    key = jax.random.PRNGKey(4)
    table = toy_table(continues=continues)
    engine = jax.jit(make_mf_search(s))(key, table)
    host = run_task_mf_search(s, table_evaluator(table), key, continues=continues)
    for name in ("tokens", "fidelity", "score", "report_score", "cost", "resource", "finish"):
        np.testing.assert_array_equal(getattr(host, name), np.asarray(getattr(engine, name)), err_msg=name)
    told = int(np.sum(host.fidelity >= 0))
    assert told == len(script) if max_queries == 6 else (told < len(script) and np.sum(host.resource) >= 27.0)
    with pytest.raises(ValueError, match="one worker"):
        run_task_mf_search(scripted(script, workers=2), table_evaluator(table), key)


@dataclasses.dataclass(frozen=True)
class LongScript(ScriptOptions):
    pass


class ScriptedTokens(Scripted):
    """``Scripted`` on any space: a script row is (tokens..., fidelity, parent)."""

    Options = LongScript

    def ask(self, key, state):
        script = jnp.asarray(self.options.script, jnp.int32)
        row = script[jnp.minimum(state.i, len(self.options.script) - 1)]
        ok = state.i < len(self.options.script)
        return Job.make(row[:-2], row[-2], row[-1], ok), state.replace(i=state.i + ok.astype(jnp.int32))


@pytest.fixture(scope="module")
def digits_task():
    """The digits CNN space with epochs (1, 3) on a 256-image slice of the training split (a fast real training)."""
    pytest.importorskip("sklearn", reason="the digits task needs scikit-learn (pip install scikit-learn)")
    from spaces.language.datasets import load
    from spaces.language.epoch_training import EpochTrainer
    from spaces.language.tasks import LanguageTask, _flat_space
    from spaces.language.training import TrainConfig

    data = load("digits")
    data = dataclasses.replace(data, x_train=data.x_train[:256], y_train=data.y_train[:256])
    space = _flat_space("digits_cnn")
    trainer = EpochTrainer(space, data, TrainConfig(epochs=3, batch_size=64, learning_rate=3e-3), (1, 3))
    return LanguageTask("digits_cnn", space, data, trainer, "acc_frac", fidelities=(1.0, 3.0), fidelity_unit="epochs",
                        continues=True)  # fmt: skip


@pytest.mark.slow
def test_a_digits_promotion_continues_the_same_training(digits_task):
    task, trainer = digits_task, digits_task.trainer
    tokens = task.space.from_spec([0.25, 1, 1, "relu", 8, 3])[None]  # dropout: per-step masks must line up too
    low = task.evaluate(tokens, [0], [0], [-1])
    promoted = task.evaluate(tokens, [0], [1], [0])
    assert trainer.stats["epochs_trained"] == 1 + 2  # the promotion trained the two epochs it adds
    trainer.memo.clear(), trainer.states.clear()
    scratch = task.evaluate(tokens, [0], [1], [0])  # its parent's state is gone: three epochs from scratch
    assert trainer.stats["epochs_trained"] == 3 + 3
    for k in ("valid", "test"):
        np.testing.assert_array_equal(promoted[k], scratch[k])
    assert promoted["valid"][0] > low["valid"][0] > 0.1  # it learns (10 classes: chance is 0.1)
    bad = task.evaluate(tokens, [0], [-1], [-1])
    assert bad["valid"][0] == -np.inf and bad["cost"][0] == 0
    with pytest.raises(ValueError, match="whole numbers"):
        type(trainer)(task.space, task.data, trainer.cfg, (1.5, 3))


@pytest.mark.slow
def test_the_task_loop_drives_a_language_task(digits_task):
    space = digits_task.space
    a = tuple(int(x) for x in space.from_spec([0.0, 1, 1, "tanh", 8, 3]))
    b = tuple(int(x) for x in space.from_spec([0.0, 0, 1, "relu", 8, 5]))
    script = (a + (0, -1), b + (0, -1), a + (1, 0))  # two at 1 epoch, then a promoted to 3
    s = ScriptedTokens(space, LongScript(fidelities=(1, 3), max_queries=2, script=script))
    before = digits_task.trainer.stats["epochs_trained"]
    h = run_task_mf_search(s, digits_task.evaluate, jax.random.PRNGKey(0), train_seed=5, continues=True)
    np.testing.assert_array_equal(h.fidelity[:3], [0, 0, 1])
    np.testing.assert_array_equal(h.resource[:3], [1, 1, 2])  # the promotion pays the 2 epochs it adds
    assert digits_task.trainer.stats["epochs_trained"] - before == 4
    assert np.all(h.cost[:3] > 0) and np.all(np.diff(h.finish[:3]) > 0) and np.all(np.isfinite(h.score[:3]))
