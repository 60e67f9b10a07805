"""Named metrics an objective returns beside its score: latency, parameters, training time, ...

An objective's ``query`` may return, beside ``valid``, ``test`` and ``cost``, one ``f32[B]`` entry per
metric it declares in ``metric_info`` (a tuple of ``Metric``: name, unit, direction). A metric is a
property of the evaluated configuration (NAS-Bench-201's inference latency, a network's parameter
count) or of its evaluation (training seconds), reported in its raw unit. A row whose configuration
the objective cannot evaluate (an invalid string, a string a table lacks) has ``NaN`` metrics.

Single-objective searchers never read metrics: the runner passes them only to multi-objective
searchers and to the histories of runs that name them (``nas.engine.runner.make_search(searcher,
metrics=...)``), so a run that names none computes and stores exactly what it did before.

``objective_vector`` turns a query's result into what a multi-objective searcher is told: the
scores to **maximize**, ``[valid, +-metric_1, ...]`` (a metric to minimize is negated), ``-inf`` in
every component of a failed evaluation (its ``valid`` is ``-inf`` or a metric is missing), so a
failed evaluation is dominated by every real one. A host ``Study`` with ``directions`` builds the
same vector from a user's values (a value to minimize negated).
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np

DIRECTIONS = ("minimize", "maximize")
STANDARD = ("valid", "test", "cost")  # every objective's entries; metrics take other names


@dataclasses.dataclass(frozen=True)
class Metric:
    """A named metric: its unit, whether lower (``minimize``) or higher is better, and what it measures."""

    name: str
    unit: str
    direction: str = "minimize"
    description: str = ""

    def __post_init__(self):
        if self.direction not in DIRECTIONS:
            raise ValueError(f"metric {self.name!r}: direction must be one of {DIRECTIONS}, got {self.direction!r}")
        if not self.name or self.name in STANDARD:
            raise ValueError(f"a metric needs a name other than {STANDARD}, got {self.name!r}")


def metric_infos(spec) -> tuple[Metric, ...]:
    """``Metric``s from ``Metric`` objects or ``(name, unit[, direction[, description]])`` tuples, names distinct."""
    out = []
    for m in spec or ():
        if isinstance(m, Metric):
            out.append(m)
        elif isinstance(m, (tuple, list)) and 2 <= len(m) <= 4 and all(isinstance(x, str) for x in m):
            out.append(Metric(*m))
        else:
            raise ValueError(
                f"a metric is Metric(name, unit, direction) or a tuple (name, unit[, direction]), got {m!r}"
            )
    names = [m.name for m in out]
    if len(set(names)) != len(names):
        raise ValueError(f"metrics {names} name one metric twice")
    return tuple(out)


def check_columns(table: str, columns: dict, info: tuple[Metric, ...], num_rows: int) -> dict[str, np.ndarray]:
    """``{name: f32[R]}`` in the order of ``info``, or a ``ValueError`` naming the column and the fix."""
    declared = [m.name for m in info]
    if sorted(columns) != sorted(declared):
        raise ValueError(
            f"{table}: metric columns {sorted(columns)} and metric_info {declared} must name the same metrics"
        )
    out = {}
    for m in info:
        v = np.asarray(columns[m.name], np.float32)
        if v.shape != (num_rows,):
            raise ValueError(f"{table}: metric {m.name!r} needs one value per row ({num_rows}), got shape {v.shape}")
        bad = ~np.isfinite(v)
        if bad.any():
            r = int(np.argmax(bad))
            raise ValueError(f"{table}: metric {m.name!r} of row {r} is {float(v[r])}, not a finite number")
        out[m.name] = v
    return out


def metric_names(objective) -> tuple[str, ...]:
    """The metrics ``objective`` declares (``metric_info``), in order; ``()`` for an objective without."""
    return tuple(m.name for m in getattr(objective, "metric_info", ()) or ())


def metric(objective, name: str) -> Metric:
    """``objective``'s ``Metric`` named ``name``, or a ``ValueError`` listing the ones it has."""
    for m in getattr(objective, "metric_info", ()) or ():
        if m.name == name:
            return m
    have = metric_names(objective)
    label = getattr(objective, "name", type(objective).__name__)
    raise ValueError(
        f"{label} has no metric {name!r}; its metrics: {list(have) or 'none'} "
        "(an objective declares them in metric_info)"
    )


def check_metrics(objective, names) -> tuple[str, ...]:
    """``names`` as a tuple, each a metric of ``objective`` and none repeated, or a ``ValueError``."""
    names = tuple(names)
    for n in names:
        metric(objective, n)
    if len(set(names)) != len(names):
        raise ValueError(f"metrics {list(names)} name one metric twice")
    return names


def objective_vector(res: dict, objective, names: tuple[str, ...]):
    """f32[B, 1 + len(names)]: the scores a multi-objective searcher maximizes (module docstring)."""
    cols = [res["valid"]]
    for n in names:
        sign = -1.0 if metric(objective, n).direction == "minimize" else 1.0
        cols.append(sign * res[n])
    vec = jnp.stack([jnp.asarray(c, jnp.float32) for c in cols], axis=-1)
    failed = jnp.isneginf(res["valid"]) | jnp.any(jnp.isnan(vec), axis=-1)
    return jnp.where(failed[..., None], -jnp.inf, vec)


def missing_metrics(names: tuple[str, ...], b: int) -> dict:
    """``{name: NaN[B]}``: the metrics of rows that were not evaluated (a partial last batch)."""
    return {n: jnp.full((b,), jnp.nan, jnp.float32) for n in names}
