"""Language spaces paired with real training: host-side objectives for digits (CNN) and diabetes (MLP).

Negrinho et al. 2019, Section 7: architectures sampled from a space written in the language are
compiled, trained briefly and compared by validation score. A ``LanguageTask`` is that
evaluation for one flattened space and one data set:

- ``digits_cnn``: a CNN space on scikit-learn's 8x8 digits (classification, accuracy in [0, 1]);
- ``diabetes_mlp``: an MLP space on scikit-learn's diabetes data (regression, ``-log`` MSE on the
  standardised target);
- ``genetic_digits``: the Genetic CNN space of Table 1 (``table1.genetic_gated_space``, 512
  architectures, one compiled program) on digits: the space of the paper's Section 7.2;
  ``genetic`` the same, named for other data sets (``dataset="cifar10"``).

``make_task(name, dataset=..., space={...}, **training)``: the data set, the space's size options
(``table1.space_options``: channel widths, nodes per stage) and the training settings are options, so
the paper's CIFAR-10 scale is a config change (``configs/paper/language_evolution.py``).

``task.evaluate(tokens[M, N], seeds[M])`` trains the ``M`` architectures (``training.Trainer``:
grouped by compiled signature, each group vmapped in one program) and returns
``{"valid", "test", "cost", "params"}`` (f32[M]; ``params``: the metric ``metric_info`` declares), ``-inf``
scores for an invalid string or a diverged run. ``make_task(name, fidelities=(1, 2, 4))`` makes epochs the fidelity:
``evaluate(tokens, seeds, fidelity, parent)`` trains to ``fidelities[fidelity]`` epochs and a
promotion continues the kept training of its ``parent`` fidelity (``epoch_training``);
``nas.host.task_search`` runs multi-fidelity searchers on it.

**Why host-side and not ``query(key, tokens)`` under jit**: different strings of a language space
compile to different programs (depth, widths, kernel sizes are array shapes), so the network to
train is only known once the token values are read on the host. The evaluation therefore runs
between jit-compiled ``ask`` and ``tell`` calls: ``nas.host.task_search`` drives the registered searchers
through ``nas.host.study.Study``. A ``LanguageTask`` has the objective's reporting attributes
(``report``, ``report_name``, ``has_test``) but no ``query``, so ``check_objective`` rejects it and
the compiled runner (``scripts.train``) cannot be handed one by mistake.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from spaces.benchmarks.metrics import Metric
from spaces.benchmarks.objective import Objective
from spaces.language import flax_modules as fm
from spaces.language.datasets import Dataset, load
from spaces.language.epoch_training import EpochTrainer, epoch_budgets
from spaces.language.flatten import FlatLanguageSpace
from spaces.language.hyperparameters import D
from spaces.language.library import siso_optional, siso_repeat, siso_sequential
from spaces.language.search_space import LanguageSpace
from spaces.language.training import TrainConfig, Trainer


def digits_cnn_space():
    """1-3 blocks of [conv (kernel 3 or 5), activation], the filter count (8/16/32) shared by every
    block (one hyperparameter used by several modules), an optional 2x2 max pool, dropout (rate 0,
    0.25 or 0.5); the trainer flattens and adds the dense head.

    Activations and the dropout rate are traced (``flax_modules``): networks that differ only there
    compile to one program and train vmapped together. The structural choices give 3 x (2 + 4 + 8)
    x 2 = 84 programs (signatures), each compiled once and cached."""
    h_filters = D([8, 16, 32])

    def block():
        return siso_sequential([fm.conv2d(h_filters, D([3, 5])), fm.activation(D(["relu", "tanh", "identity"]))])

    return siso_sequential(
        [
            siso_repeat(block, D([1, 2, 3])),
            siso_optional(lambda: fm.max_pool(2, 2), D([0, 1])),
            fm.dropout(D([0.0, 0.25, 0.5])),
        ]
    )


def diabetes_mlp_space():
    """1-3 layers of [dense (16/64/256 units), activation, dropout (rate 0, 0.1, 0.3)]: 39 programs."""

    def layer():
        return siso_sequential(
            [
                fm.dense(D([16, 64, 256])),
                fm.activation(D(["relu", "tanh", "identity"])),
                fm.dropout(D([0.0, 0.1, 0.3])),
            ]
        )

    return siso_repeat(layer, D([1, 2, 3]))


def _genetic_gated(**space):
    from spaces.language.table1 import genetic_gated_space

    return genetic_gated_space(**space)


# task -> (space function, data set, training defaults, report kind)
TASKS = {
    # Section 7.2's space: Genetic CNN (spaces.language.table1), the code traced: one compiled program
    "genetic_digits": (_genetic_gated, "digits", TrainConfig(epochs=2, batch_size=64, learning_rate=3e-3), "acc_frac"),
    "genetic": (_genetic_gated, "digits", TrainConfig(epochs=2, batch_size=64, learning_rate=3e-3), "acc_frac"),
    "digits_cnn": (digits_cnn_space, "digits", TrainConfig(epochs=4, batch_size=64, learning_rate=3e-3), "acc_frac"),
    "diabetes_mlp": (
        diabetes_mlp_space,
        "diabetes",
        TrainConfig(epochs=40, batch_size=32, learning_rate=1e-3),
        "neg_log_mse",
    ),
}


@dataclasses.dataclass(eq=False)
class LanguageTask(Objective):
    """A flattened language space, a data set and a trainer (module docstring); with ``fidelities`` (epochs) the
    trainer is an ``EpochTrainer`` and a promotion continues the lower fidelity's training."""

    name: str
    space: FlatLanguageSpace
    data: Dataset
    trainer: Trainer
    report_kind: str = "acc_frac"
    has_test: bool = True
    protocol: str = "trained"
    fidelities: tuple = ()
    fidelity_unit: str = ""
    continues: bool = False
    metric_info: tuple = (Metric("params", "parameters", "minimize", "the compiled network's parameters"),)

    def evaluate(self, tokens, seeds, fidelity=None, parent=None) -> dict[str, np.ndarray]:
        """Trains every row of ``tokens`` (int[M, N]) with its seed (int[M]); f32[M] valid, test, cost, params.

        With fidelities: row ``i`` at ``fidelities[fidelity[i]]`` epochs (None: the top), continuing its training
        at ``fidelities[parent[i]]`` (-1 or None: from scratch), as ``nas.host.task_search`` asks."""
        tokens = np.asarray(tokens, np.int32).reshape(-1, self.space.num_tokens)
        seeds = np.broadcast_to(np.asarray(seeds, np.int64), (tokens.shape[0],))
        if self.fidelities:
            return self.trainer.evaluate(tokens, seeds, fidelity, parent)
        if fidelity is not None:
            raise ValueError(f"{self.name} has no fidelities; make it with make_task({self.name!r}, fidelities=...)")
        return self.trainer.evaluate(tokens, seeds)


@functools.cache
def _flat_space(task: str, space: tuple = ()) -> FlatLanguageSpace:
    """The task's flattened space with size options ``space`` (sorted (name, value) pairs)."""
    if not space:
        return FlatLanguageSpace(LanguageSpace(TASKS[task][0], task))
    label = task + "".join(f",{k}={v}" for k, v in space)
    return FlatLanguageSpace(LanguageSpace(functools.partial(TASKS[task][0], **dict(space)), label))


def space_options(task: str) -> list[str]:
    """The size options of task ``task``'s space (keyword arguments of its space function)."""
    import inspect

    fn = TASKS[task][0]
    params = inspect.signature(fn).parameters
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):  # a wrapper: the options of what it wraps
        from spaces.language.table1 import genetic_gated_space

        params = inspect.signature(genetic_gated_space).parameters
    return list(params)


def available_tasks() -> list[str]:
    return sorted(TASKS)


def make_task(
    name: str, data_dir: str = "", dataset: str = "", space: dict | None = None, fidelities=(), **train_options
) -> LanguageTask:
    """Task ``name`` with its training defaults, overridden by ``train_options`` (``TrainConfig`` fields), on
    ``dataset`` (default: the task's) with the space's size options ``space`` (``space_options(name)``).

    ``fidelities`` (whole, increasing epoch counts, e.g. ``(1, 2, 4)``): epochs as the fidelity
    (``spaces.language.epoch_training``); the training's ``epochs`` is then the top one."""
    if name not in TASKS:
        from spaces.names import unknown

        raise ValueError(unknown("language task", name, available_tasks()))
    _, data_name, cfg, report_kind = TASKS[name]
    fields = {f.name for f in dataclasses.fields(TrainConfig)}
    bad = sorted(set(train_options) - fields)
    if bad:
        raise ValueError(f"unknown training option(s) {bad}; TrainConfig fields: {sorted(fields)}")
    space = dict(space or {})
    bad = sorted(set(space) - set(space_options(name)))
    if bad:
        raise ValueError(f"task {name!r}: its space has no option(s) {bad}; its options: {space_options(name)}")
    cfg = dataclasses.replace(cfg, **train_options)
    data = load(dataset or data_name, data_dir)
    key = tuple(sorted((k, tuple(v) if isinstance(v, list | tuple) else v) for k, v in space.items()))
    space = _flat_space(name, key)
    if not fidelities:
        return LanguageTask(name, space, data, Trainer(space, data, cfg), report_kind=report_kind)
    budgets = epoch_budgets(name, fidelities)
    cfg = dataclasses.replace(cfg, epochs=int(budgets[-1]))
    trainer = EpochTrainer(space, data, cfg, budgets)
    return LanguageTask(name, space, data, trainer, report_kind, fidelities=budgets, fidelity_unit="epochs",
                        continues=True)  # fmt: skip
