"""A Study's budget: one named argument by the kind of searcher, and nasjax 0.2's ``max_queries``.

- ``max_trials=N``: a single-fidelity searcher's budget, the trials it plans for;
- ``max_resource=R``: a multi-fidelity searcher's compute, in the unit of its fidelities (epochs, steps), a
  whole number of full trainings ``fidelities[-1]`` (``max_resource=20 * 27`` with ``fidelities=[1, 3, 9,
  27]``: twenty full trainings' worth);
- ``optimize(n_trials=)`` is how many trials one call runs (Optuna's), not the budget.

Both become the searcher's ``max_queries`` (trials, or full trainings), which the compiled engine and a
study file keep. ``max_queries=`` given to a Study works for a release with a ``DeprecationWarning`` naming
the argument to give; ``study_arguments`` maps one for code that keeps a searcher's budget that way (the
adapters' samplers, tests that share options with the engine).
"""

from __future__ import annotations

import warnings

import numpy as np

from nas.host.job_driver import is_multi_fidelity

DEFAULT_QUERIES = 100  # the budget when none is given: 100 trials, or 100 full trainings' worth of compute


def _positive_whole(name: str, x) -> int:
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)) or x < 1:
        raise ValueError(f"{name} must be a positive integer, got {x!r}")
    return int(x)


def study_budget(searcher, jobs: bool, fidelities, max_queries, max_trials, max_resource) -> int:
    """The searcher's budget (its options' ``max_queries``) from the Study's budget argument: ``max_trials``
    (a single-fidelity searcher: how many trials) or ``max_resource`` (a multi-fidelity searcher: compute in
    the fidelities' unit, a whole number of full trainings ``fidelities[-1]``); nasjax 0.2's ``max_queries``
    (trials, or full trainings) works with a ``DeprecationWarning``. Each mistake is one line."""
    given = [n for n, v in (("max_queries", max_queries), ("max_trials", max_trials), ("max_resource", max_resource))
             if v is not None]  # fmt: skip
    if len(given) > 1:
        raise ValueError(f"give the study one budget, not {' and '.join(given)}: max_trials= for a single-fidelity "
                         "searcher, max_resource= for a multi-fidelity one")  # fmt: skip
    if max_queries is not None:
        q = _positive_whole("max_queries", max_queries)
        new = f"max_resource={q} * fidelities[-1] (compute, in the fidelities' unit)" if jobs else f"max_trials={q}"
        warnings.warn(f"max_queries= is deprecated (it meant trials, or full trainings for a multi-fidelity searcher): "
                      f"give {new}", DeprecationWarning, stacklevel=4)  # fmt: skip
        return q
    if jobs and max_trials is not None:
        raise ValueError(f"{searcher!r} is multi-fidelity: its budget is compute, max_resource= in the fidelities' "
                         "unit (max_resource=20 * fidelities[-1]: twenty full trainings' worth); max_trials= is a "
                         "single-fidelity searcher's; optimize(n_trials=...) counts one call's trials")  # fmt: skip
    if not jobs and max_resource is not None:
        raise ValueError(f"max_resource= is a multi-fidelity searcher's compute budget; {searcher!r} evaluates each "
                         "trial once: give max_trials=... (how many trials the searcher plans for)")  # fmt: skip
    if max_trials is not None:
        return _positive_whole("max_trials", max_trials)
    if max_resource is None or not fidelities:
        return DEFAULT_QUERIES  # a multi-fidelity searcher without fidelities is refused by its driver
    ok = isinstance(max_resource, (int, float, np.integer, np.floating)) and not isinstance(max_resource, bool)
    top = fidelities[-1]
    full = float(max_resource) / float(top) if ok and np.isfinite(max_resource) and max_resource > 0 else 0.0
    if round(full) < 1 or abs(full - round(full)) > 1e-9 * max(1.0, full):
        some = ", ".join(f"{k * top:g}" for k in (1, 10, 20))
        raise ValueError(f"max_resource must be a whole number of full trainings (fidelities[-1]={top:g} each, e.g. "
                         f"{some}), got {max_resource!r}")  # fmt: skip
    return int(round(full))


def study_arguments(arguments: dict) -> dict:
    """``arguments`` for ``Study(**...)`` with nasjax 0.2's ``max_queries`` (trials, or full trainings) as the
    budget argument of today for its ``searcher``: ``max_trials``, or ``max_resource`` (``max_queries *
    fidelities[-1]``); for code that keeps a searcher's budget as ``max_queries`` (the adapters' samplers)."""
    out = dict(arguments)
    if out.get("max_queries") is None:
        out.pop("max_queries", None)
        return out
    q, fidelities = out.pop("max_queries"), out.get("fidelities")
    searcher = out.get("searcher", "regularized_evolution")
    if isinstance(searcher, str) and is_multi_fidelity(searcher) and fidelities:
        out["max_resource"] = q * list(fidelities)[-1]
    elif isinstance(searcher, str) and not is_multi_fidelity(searcher):
        out["max_trials"] = q
    return out  # a searcher object's budget is its own; a multi-fidelity one without fidelities is refused
