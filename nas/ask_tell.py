"""Host ask/tell: the registered searchers driven by any Python objective.

For objectives that are not JAX (a training script, a simulator, a function
you write), the same pure searchers run one step at a time from Python, in
the style of Optuna::

    from nas.ask_tell import Study

    def objective(p):                       # any callable returning a number
        return (p["lr"] - 0.01) ** 2 + 0.1 * p["layers"]

    study = Study({"lr": [0.001, 0.003, 0.01, 0.03], "layers": [1, 2, 3, 4]},
                  searcher="regularized_evolution", direction="minimize", seed=0,
                  max_queries=12, population_size=6, tournament_size=3)
    study.optimize(objective, n_trials=12)
    study.best_params, study.best_value

or by hand: ``trial = study.ask(); study.tell(trial, objective(trial.params))``.

Batches for parallel evaluation: ``Study(..., batch_size=4)`` makes the
searcher propose 4 strings per step; ``study.ask(4)`` hands them out, and
``study.optimize(fn, n, batch_size=4, executor=ThreadPoolExecutor(4))``
evaluates each batch with ``executor.map``. The searcher updates once all
trials of its batch are told (its ``tell`` takes the whole batch).

Values: ``direction="minimize"`` feeds ``-value`` to the searchers (they
maximize). NaN or infinite values raise ``ValueError``; to record a failed
evaluation, ``tell(trial, None)``: the searcher sees ``-inf`` (the score of an
invalid string) and the trial never becomes the best.

Keys follow ``nas.runner.search_step`` (init ``fold_in(key, INIT_FOLD)``, step
``t`` splits ``fold_in(key, t)``), so a Study whose objective reads a table
proposes exactly the strings of the compiled runner with the same seed.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from nas.runner import INIT_FOLD
from nas.searcher import make_searcher
from spaces.base import CategoricalSpace, Space


@dataclasses.dataclass
class Trial:
    number: int
    tokens: np.ndarray  # int32[N]
    params: Any  # space.to_spec(tokens): {name: value} for a dict space
    value: float | None = None
    state: str = "pending"  # "pending" | "complete" | "failed"


def make_space(space: Space | dict[str, Sequence[Any]], name: str = "study") -> Space:
    """A Space as is, or a CategoricalSpace from ``{name: [values, ...]}``."""
    if isinstance(space, Space):
        return space
    if not isinstance(space, dict) or not space:
        raise TypeError("space must be a Space or a non-empty dict {hyperparameter: [values, ...]}")
    for k, v in space.items():
        if isinstance(v, (str, bytes)) or not isinstance(v, Sequence) or len(v) == 0:
            raise ValueError(f"hyperparameter {k!r}: give a non-empty list of values, got {v!r}")
    return CategoricalSpace(name, space)


class Study:
    """Optuna-style ask/tell over a registered searcher (see the module doc)."""

    def __init__(
        self,
        space: Space | dict[str, Sequence[Any]],
        searcher: str = "regularized_evolution",
        direction: str = "minimize",
        seed: int = 0,
        max_queries: int = 100,
        **searcher_kwargs,
    ):
        if direction not in ("minimize", "maximize"):
            raise ValueError(f"direction must be 'minimize' or 'maximize', got {direction!r}")
        self.space = make_space(space)
        if isinstance(self.space, CategoricalSpace) and max_queries > self.space.size:
            raise ValueError(
                f"max_queries={max_queries} exceeds the {self.space.size} distinct configurations of this space "
                "(queries are never repeated); lower max_queries"
            )
        self.direction = direction
        self.seed = int(seed)
        self.max_queries = int(max_queries)
        self._name = searcher
        self._kwargs = dict(searcher_kwargs)
        self.trials: list[Trial] = []
        self._build()

    def _build(self) -> None:
        self.searcher = make_searcher(self._name, self.space, max_queries=self.max_queries, **self._kwargs)
        self._key = jax.random.PRNGKey(self.seed)
        self._ask_fn = jax.jit(self.searcher.ask)
        self._tell_fn = jax.jit(self.searcher.tell)
        self._state = jax.jit(self.searcher.init)(jax.random.fold_in(self._key, INIT_FOLD))
        self._step = 0
        self._batch: list[Trial] = []  # trials of the searcher's current batch
        self._batch_tokens = None
        self._k_tell = None

    @property
    def batch_size(self) -> int:
        return self.searcher.batch_size

    # -- ask -------------------------------------------------------------------
    def _new_batch(self) -> None:
        k_ask, _, self._k_tell = jax.random.split(jax.random.fold_in(self._key, self._step), 3)
        tokens, self._state = self._ask_fn(k_ask, self._state)
        self._batch_tokens = tokens
        self._batch = []

    def _ask_one(self) -> Trial:
        if len(self.trials) >= self.max_queries:
            raise RuntimeError(f"the study's budget of max_queries={self.max_queries} trials is spent")
        if self._batch_tokens is None:
            self._new_batch()
        elif len(self._batch) == self.batch_size:
            raise RuntimeError(
                f"all {self.batch_size} trials of the searcher's current batch are handed out; tell their values "
                f"before asking for more (for more trials in parallel, create the Study with batch_size=...)"
            )
        tokens = np.asarray(self._batch_tokens[len(self._batch)], np.int32)
        trial = Trial(number=len(self.trials), tokens=tokens, params=self.space.to_spec(tokens))
        self._batch.append(trial)
        self.trials.append(trial)
        return trial

    def ask(self, n: int | None = None) -> Trial | list[Trial]:
        """One trial, or a list of ``n`` (at most the searcher's ``batch_size`` at a time)."""
        if n is None:
            return self._ask_one()
        return [self._ask_one() for _ in range(int(n))]

    # -- tell ------------------------------------------------------------------
    def tell(self, trial: Trial | int, value: float | None) -> None:
        """Records ``value`` (None = failed) for ``trial``; updates the searcher when its batch is complete."""
        t = self.trials[trial] if isinstance(trial, int) else trial
        if t.state != "pending" or not any(t is b for b in self._batch):
            raise ValueError(f"trial {t.number} is not a pending trial of this study (state {t.state!r})")
        if value is None:
            t.state = "failed"
        else:
            v = float(value)
            if not math.isfinite(v):
                raise ValueError(
                    f"objective value of trial {t.number} ({t.params}) is {v}; return a finite number, "
                    "or tell(trial, None) to record a failed evaluation"
                )
            t.value, t.state = v, "complete"
        if len(self._batch) == self.batch_size and all(b.state != "pending" for b in self._batch):
            sign = -1.0 if self.direction == "minimize" else 1.0
            scores = [sign * b.value if b.state == "complete" else -np.inf for b in self._batch]
            scores = jnp.asarray(np.asarray(scores, np.float32))
            self._state, _ = self._tell_fn(self._k_tell, self._batch_tokens, scores, self._state)
            self._step += 1
            self._batch, self._batch_tokens = [], None

    # -- the loop ----------------------------------------------------------------
    def optimize(
        self,
        fn: Callable[[Any], float],
        n_trials: int | None = None,
        batch_size: int | None = None,
        executor=None,
        catch: tuple[type[BaseException], ...] = (),
    ) -> Study:
        """Evaluates ``fn(params)`` for ``n_trials`` trials (default: the rest of the budget).

        ``batch_size`` sets the searcher's batch size (allowed before the first
        trial); each batch is evaluated with ``executor.map`` when an executor
        (e.g. ``concurrent.futures.ThreadPoolExecutor``) is given. Exceptions
        listed in ``catch`` mark the trial failed; others propagate.
        """
        if batch_size is not None and int(batch_size) != self.batch_size:
            if self.trials:
                raise ValueError(
                    f"batch_size can change only before the first trial (the searcher runs with {self.batch_size})"
                )
            self._kwargs["batch_size"] = int(batch_size)
            self._build()
        n_trials = self.max_queries - len(self.trials) if n_trials is None else int(n_trials)
        if len(self.trials) + n_trials > self.max_queries:
            raise ValueError(
                f"n_trials={n_trials} exceeds the remaining budget "
                f"({self.max_queries - len(self.trials)} of max_queries={self.max_queries})"
            )

        def safe(params):
            try:
                return fn(params)
            except catch:
                return None

        done = 0
        while done < n_trials:
            room = self.batch_size - len(self._batch) if self._batch_tokens is not None else self.batch_size
            trials = self.ask(min(room, n_trials - done))
            params = [t.params for t in trials]
            values = list(executor.map(safe, params)) if executor is not None else [safe(p) for p in params]
            for t, v in zip(trials, values):
                self.tell(t, v)
            done += len(trials)
        return self

    # -- results -------------------------------------------------------------------
    @property
    def best_trial(self) -> Trial:
        done = [t for t in self.trials if t.state == "complete"]
        if not done:
            raise ValueError("no completed trial yet")
        pick = min if self.direction == "minimize" else max
        return pick(done, key=lambda t: t.value)

    @property
    def best_params(self):
        return self.best_trial.params

    @property
    def best_value(self) -> float:
        return self.best_trial.value
