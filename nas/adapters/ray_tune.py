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

The searcher runs through ``nas.host.study.Study`` (host ask/tell, ``nas/adapters/bridge.py``) on
the Tune driver; only the configurations travel to the workers.

- **Space.** ``tune.choice``, ``tune.uniform``, ``tune.loguniform``, ``tune.quniform``,
  ``tune.qloguniform``, ``tune.randint``, ``tune.lograndint``, ``tune.qrandint`` and
  ``tune.qlograndint`` parameters (nested dicts too: names join with "/"), from ``param_space`` or
  ``space=`` (lists, Tune domains or ``spaces.params`` declarations, which set a grid's ``num`` and
  conditions ``when=``); constants in ``param_space`` pass through. A float or int range is an
  ordered grid (``spaces.params``: 101 values, or 16 per decade on a log scale; Tune's bounds:
  ``randint``'s upper bound excluded, a ``q`` domain's values the multiples of ``q`` inside its
  bounds). ``tune.grid_search``
  (every value evaluated: not a searcher's choice), ``tune.randn`` (unbounded) and
  ``tune.sample_from`` are refused with a clear error.
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
    from ray.tune.search.sample import Categorical, Domain, LogUniform, Normal, Quantized, Uniform
    from ray.tune.search.sample import Float as TuneFloat
    from ray.tune.search.sample import Integer as TuneInteger
    from ray.tune.search.variant_generator import parse_spec_vars
    from ray.tune.utils.util import unflatten_dict
except ImportError as e:  # optional dependency
    raise MissingPackageError('nas.adapters.ray_tune needs Ray Tune: pip install "ray[tune]"') from e

from nas.adapters.bridge import BudgetSpent, StudyBridge
from spaces.data_files import read_pickle
from spaces.files import DataError, write_bytes_atomic
from spaces.params import Categorical as ParamCategorical
from spaces.params import Float, Int

_GRID = (
    "tune.grid_search evaluates every value; a searcher chooses among values: give tune.choice([...]) "
    "(or run the grid with Tune's default search)"
)


def _multiples(lower: float, upper: float, q: float) -> tuple[float, float]:
    """The lowest and highest multiple of ``q`` inside ``[lower, upper]`` (Tune's quantized bounds)."""
    lo, hi = math.ceil(lower / q - 1e-9), math.floor(upper / q + 1e-9)
    return float(f"{lo * q:.12g}"), float(f"{hi * q:.12g}")


def _declaration(name: str, domain: Domain):
    """A Tune domain as a ``spaces.params`` declaration (a one-value domain as a one-value list)."""
    if isinstance(domain, Categorical):
        return list(domain.categories)
    sampler = domain.get_sampler()
    q = sampler.q if isinstance(sampler, Quantized) else None
    inner = sampler.sampler if q is not None else sampler
    what = f"parameter {name!r} ({type(domain).__name__} with {type(inner).__name__.strip('_')} sampling)"
    if not isinstance(domain, (TuneFloat, TuneInteger)) or not isinstance(inner, (Uniform, LogUniform)):
        hint = "tune.randn has no bounds" if isinstance(inner, Normal) else "the searcher cannot choose its value"
        raise ValueError(f"SearcherSearch cannot map {what}: {hint}; give tune.uniform, tune.loguniform, "
                         "tune.randint or tune.choice")  # fmt: skip
    log = isinstance(inner, LogUniform)
    if isinstance(domain, TuneFloat):
        lo, hi = (domain.lower, domain.upper) if q is None else _multiples(domain.lower, domain.upper, q)
        return [lo] if lo >= hi else Float(lo, hi, log=log, step=q)
    if q is None or q == 1:  # randint, lograndint: the upper bound is excluded
        lo, hi, step = int(domain.lower), int(domain.upper) - 1, None
    else:
        lo, hi = (int(round(b)) for b in _multiples(domain.lower, domain.upper, q))
        step = int(q)
    return [lo] if lo >= hi else Int(lo, hi, log=log, step=step)


def declared_params(config: dict, lists: bool = False, prefix: tuple = ()) -> dict[str, Any]:
    """``{"a/b": declaration}`` for the parameters of a Tune ``param_space`` (constants skipped); with
    ``lists`` (the ``space=`` argument) every leaf is a parameter and lists are choices."""
    space = {}
    for k, v in config.items():
        name = "/".join(map(str, prefix + (k,)))
        if isinstance(v, dict) and set(v) == {"grid_search"}:
            raise ValueError(f"SearcherSearch cannot use tune.grid_search (parameter {name!r}): {_GRID}")
        if isinstance(v, dict):
            space.update(declared_params(v, lists, prefix + (k,)))
        elif isinstance(v, Domain):
            space[name] = _declaration(name, v)
        elif isinstance(v, (Float, Int, ParamCategorical)):
            space[name] = v
        elif lists and isinstance(v, (list, tuple)) and v:
            space[name] = list(v)
        elif lists:
            raise ValueError(f"space[{name!r}] must be a non-empty list, a Tune domain or Float/Int, got {v!r}")
    if not prefix and not space:
        raise ValueError("the search space has no parameter to search: give tune.choice, tune.uniform, ... domains")
    return space


class SearcherSearch(Searcher):
    """A registered searcher (``nas.searchers.make_searcher``) as a Ray Tune ``Searcher`` (see the module doc).

    Args:
      searcher: registered searcher name ("regularized_evolution", "remaade", "bananas", ...).
      space: ``{name: [values] | Tune domain | Float | Int | Categorical}``; None = from the Tuner's
        ``param_space``.
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
            if not isinstance(space, dict) or not space:
                raise ValueError(
                    f"space must be a non-empty dict {{name: [values] | tune domain | Float}}, got {space!r}"
                )
            self._space = declared_params(space, lists=True)
        self._bridge = StudyBridge(searcher, max_queries, seed, searcher_options)

    def set_search_properties(self, metric: str | None, mode: str | None, config: dict, **spec) -> bool:
        if self._bridge.started or (self._space is not None and config and parse_spec_vars(config)[1:] != ([], [])):
            return False  # Tune then refuses a second search space
        if config and self._space is None:
            if parse_spec_vars(config)[2]:
                raise ValueError(f"SearcherSearch cannot use tune.grid_search: {_GRID}")
            self._space = declared_params(config)
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
        """The ``nas.host.study.Study`` behind the searcher (None until the first suggestion)."""
        return self._bridge.study
