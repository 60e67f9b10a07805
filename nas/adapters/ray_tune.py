"""Any registered searcher as a Ray Tune ``Searcher``: expensive objectives evaluated in parallel on a Ray cluster.

::

    from ray import tune
    from nas.adapters.ray_tune import SearcherSearch

    def train(config):                         # runs on a Ray worker
        tune.report({"loss": train_and_validate(config["lr"], config["width"])})

    tuner = tune.Tuner(
        train,
        param_space={"lr": tune.choice([1e-4, 1e-3, 1e-2]), "width": tune.choice([64, 128, 256])},
        tune_config=tune.TuneConfig(
            search_alg=SearcherSearch("bananas", max_queries=60, batch_size=8),
            metric="loss", mode="min", num_samples=60,
        ),
    )
    tuner.fit()

The searcher runs through ``nas.host.ask_tell.Study`` (host ask/tell, ``nas/adapters/bridge.py``) on
the Tune driver; only the configurations travel to the workers.

- **Space.** ``tune.choice`` parameters (nested dicts too: names join with "/"), from
  ``param_space`` or ``space=`` (lists or ``tune.choice``); constants in ``param_space`` pass
  through. Float/int domains and ``tune.grid_search`` have no value list the searcher can use and
  are refused with a clear error.
- **Batches.** ``batch_size=k`` (a searcher option) lets ``k`` trials run at once; while a batch
  is out, ``suggest`` returns None (Tune asks again) until its last trial completes, and the
  searcher is told the whole batch.
- **Failed trials.** A trial that errored, or whose last result lacks the metric (or has NaN or
  infinity) is a failed evaluation (the searcher sees ``-inf``).
- **Budget.** ``max_queries`` trials; then ``suggest`` returns ``Searcher.FINISHED``.
- **Checkpoints.** ``save``/``restore`` (called by Tune with its experiment checkpoints) store
  the trials handed out and the values told; ``restore`` replays them through a new Study with the
  same seed, so the searcher's state is rebuilt exactly (``nas/adapters/bridge.py``).
- **Limits.** Single metric. ``add_evaluated_point`` is not supported (the searcher is told only
  the configurations it proposed).
"""

from __future__ import annotations

import math
import pickle
import warnings
from typing import Any

from spaces.files import MissingPackageError

try:
    from ray.tune.search import Searcher
    from ray.tune.search.sample import Categorical, Domain
    from ray.tune.search.variant_generator import parse_spec_vars
    from ray.tune.utils.util import unflatten_dict
except ImportError as e:  # optional dependency
    raise MissingPackageError('nas.adapters.ray_tune needs Ray Tune: pip install "ray[tune]"') from e

from nas.adapters.bridge import BudgetSpent, StudyBridge
from spaces.data_files import read_pickle
from spaces.files import DataError, write_bytes_atomic

_HOW = "use tune.choice([values])"


def categorical_space(config: dict) -> dict[str, list]:
    """``{"a/b": [values]}`` for the ``tune.choice`` parameters of a Tune ``param_space`` (constants skipped)."""
    _, domain_vars, grid_vars = parse_spec_vars(config)
    if grid_vars:
        names = ["/".join(map(str, p)) for p, _ in grid_vars]
        raise ValueError(f"SearcherSearch cannot use tune.grid_search (parameters {names}); {_HOW}")
    space = {}
    for path, domain in domain_vars:
        name = "/".join(map(str, path))
        if not isinstance(domain, Categorical):
            raise ValueError(
                f"SearcherSearch maps only categorical parameters; {name!r} is {type(domain).__name__} "
                f"(no list of values): {_HOW}"
            )
        space[name] = list(domain.categories)
    if not space:
        raise ValueError(f"the search space has no tune.choice parameter; {_HOW}")
    return space


def _as_domains(space: dict) -> dict:
    """``space`` with every list of values as ``tune.choice`` (nested dicts kept)."""
    if not isinstance(space, dict) or not space:
        raise ValueError(f"space must be a non-empty dict {{name: [values] | tune.choice(...)}}, got {space!r}")
    out = {}
    for k, v in space.items():
        if isinstance(v, dict):
            out[k] = _as_domains(v)
        elif isinstance(v, Domain):
            out[k] = v
        elif isinstance(v, (list, tuple)) and v:
            out[k] = Categorical(list(v))
        else:
            raise ValueError(f"space[{k!r}] must be a non-empty list of values or tune.choice([...]), got {v!r}")
    return out


class SearcherSearch(Searcher):
    """A registered searcher (``nas.core.searcher.make_searcher``) as a Ray Tune ``Searcher`` (see the module doc).

    Args:
      searcher: registered searcher name ("regularized_evolution", "remaade", "bananas", ...).
      space: ``{name: [values] | tune.choice(...)}``; None = from the Tuner's ``param_space``.
      metric, mode: the metric to optimize and "min" or "max" (or from ``tune.TuneConfig``).
      max_queries: the searcher's budget of trials.
      seed: the searcher's seed.
      **searcher_options: options of the searcher (``batch_size``, ``population_size``, ...).
    """

    def __init__(
        self,
        searcher: str = "regularized_evolution",
        space: dict[str, Any] | None = None,
        *,
        metric: str | None = None,
        mode: str | None = None,
        max_queries: int = 100,
        seed: int = 0,
        **searcher_options,
    ):
        if mode not in (None, "min", "max"):
            raise ValueError(f"mode must be 'min' or 'max', got {mode!r}")
        super().__init__(metric=metric, mode=mode)
        self._space = None
        if space is not None:
            self._space = categorical_space(_as_domains(space))
        self._bridge = StudyBridge(searcher, max_queries, seed, searcher_options)

    def set_search_properties(self, metric: str | None, mode: str | None, config: dict, **spec) -> bool:
        if self._bridge.started or (self._space is not None and config and parse_spec_vars(config)[1:] != ([], [])):
            return False  # Tune then refuses a second search space
        if config and self._space is None:
            self._space = categorical_space(config)
        self._metric = metric or self._metric
        self._mode = mode or self._mode
        return True

    def _start(self) -> None:
        if self._space is None:
            raise ValueError("SearcherSearch has no search space: give space=... or param_space to tune.Tuner")
        if not self._metric or self._mode not in ("min", "max"):
            raise ValueError(
                "SearcherSearch needs metric and mode ('min' or 'max'): give them to SearcherSearch or tune.TuneConfig"
            )
        self._bridge.start(self._space, "minimize" if self._mode == "min" else "maximize")

    def suggest(self, trial_id: str) -> dict | str | None:
        with self._bridge.cond:
            if not self._bridge.started:
                self._start()
            try:
                params = self._bridge.propose(trial_id)
            except BudgetSpent:
                return Searcher.FINISHED
        return None if params is None else unflatten_dict(params, delimiter="/")

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False) -> None:
        value = None
        if not error and result is not None:
            value = result.get(self._metric)
            if value is None:
                warnings.warn(
                    f"trial {trial_id}: the result has no metric {self._metric!r}; recorded as a failed evaluation",
                    stacklevel=2,
                )
            elif isinstance(value, (int, float)) and not math.isfinite(value):
                value = None  # NaN / inf: failed (the bridge would warn too)
        self._bridge.record(trial_id, value)

    def save(self, checkpoint_path: str) -> None:
        write_bytes_atomic(checkpoint_path, pickle.dumps(self.__dict__))

    def restore(self, checkpoint_path: str) -> None:
        fix = "restore the experiment from another Tune checkpoint"
        state = read_pickle(checkpoint_path, fix)
        if not isinstance(state, dict):
            raise DataError(f"{checkpoint_path}: not a SearcherSearch checkpoint (a {type(state).__name__}); {fix}")
        self.__dict__.update(state)

    @property
    def study(self):
        """The ``nas.host.ask_tell.Study`` behind the searcher (None until the first suggestion)."""
        return self._bridge.study
