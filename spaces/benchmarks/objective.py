"""The objective contract: what the runner, the chunked loop and the reports need of a benchmark.

An objective scores batches of token strings of its ``space``::

    res = objective.query(key, tokens)   # tokens int32[B, N] -> {"valid", "test", "cost"}, each f32[B]

- ``valid``: the score the searcher sees (higher is better): a validation
  accuracy, ``-log`` MSE, minus a validation RMSE, ... ``-inf`` marks a failed
  evaluation (an invalid string, a diverged training run): never a crash and
  never a best.
- ``test``: the score reports use: the test split's score, or, where the
  objective has none (``has_test`` False), the seed-mean validation score.
- ``cost``: what the evaluation cost (training seconds, latency, ...), in ``cost_unit`` ("s",
  "training iterations", ...; "" where the objective does not say), which reports print beside it.

``query`` is pure and jittable, and the objective is a pytree (its data arrays
are leaves, its configuration static), so it is passed to compiled code as an
argument: a table is a gather (``spaces.benchmarks.tabular``), a training task
trains the ``B`` candidates at once (``spaces.benchmarks.mlp_training``).

Besides ``query``, ``space``, ``name`` and ``has_test``, an objective says how a
score becomes the reported metric (``report``, ``report_name``; e.g. accuracy %
-> error %) and may give ``protocol`` and ``best_valid()`` (the best entry of a
table, for reference lines in reports). ``Objective`` holds the defaults; any
class with the attributes works (``check_objective`` says what is missing).

**Fidelities** (optional). An objective may offer cheaper, less accurate evaluations: ``fidelities``
is an increasing tuple of budgets in ``fidelity_unit`` (e.g. ``(12.0, 200.0)`` epochs), the last one
the full evaluation. Such an objective's ``query(key, tokens, fidelity=None)`` takes the fidelity of
each row, ``int32[B]`` indices into ``fidelities`` (``None``: every row at the top fidelity, so a
searcher that ignores fidelities sees exactly the single-fidelity objective), and its ``cost`` is
what that evaluation spent when trained from scratch. ``continues`` says whether a configuration's
evaluation at a higher fidelity can continue its lower-fidelity training (the same training run,
stopped later): then a promotion pays only the difference of the budgets
(``nas.engine.multi_fidelity``). Tables whose fidelities are separate trainings (each budget with its
own learning-rate schedule, as NAS-Bench-101/201) do not continue. An objective without fidelities has
one, its full evaluation (``fidelity_budgets``).

**Metrics** (optional). ``metric_info`` declares named metrics (``spaces.benchmarks.metrics.Metric``:
latency, parameters, training time, with their units and whether lower is better) that ``query``
returns beside ``valid``, ``test`` and ``cost``, one ``f32[B]`` each (``NaN`` for a row it could not
evaluate). Multi-objective searchers read them; single-objective searchers ignore them.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

# score -> reported value, and the reported value's name
REPORTS: dict[str, tuple[Callable[[np.ndarray], np.ndarray], str]] = {
    "acc_pct": (lambda s: 100.0 - s, "error (%)"),
    "acc_frac": (lambda s: 100.0 * (1.0 - s), "error (%)"),
    "neg_log_mse": (lambda s: np.exp(-s), "MSE"),
    "auc_frac": (lambda s: 100.0 * (1.0 - s), "1 - ROC-AUC (%)"),
    "neg": (lambda s: -s, "loss"),
    "neg_rmse": (lambda s: -s, "RMSE"),
    "identity": (lambda s: s, "score"),
}

REQUIRED = ("query", "space", "name", "has_test", "report", "report_name")


class Objective:
    """Defaults of the objective contract (module docstring); subclasses set ``report_kind``."""

    report_kind: str = "identity"
    protocol: str = "-"
    fidelities: tuple[float, ...] = ()  # increasing budgets; () = one fidelity, the full evaluation
    fidelity_unit: str = ""  # what a budget counts: "epochs", "iterations", ...
    continues: bool = False  # a higher fidelity continues a lower one's training (pays the difference)
    metric_info: tuple = ()  # spaces.benchmarks.metrics.Metric of each named metric query returns
    cost_unit: str = ""  # what ``cost`` counts ("s", "training iterations", ...); "" = not said

    @property
    def report_name(self) -> str:
        split = "test" if self.has_test else "validation"
        return f"{split} {REPORTS[self.report_kind][1]}"

    def report(self, score):
        """Score (higher is better) -> reported metric (e.g. error %), numpy float64."""
        return REPORTS[self.report_kind][0](np.asarray(score, np.float64))

    def best_valid(self) -> dict | None:
        """``{"best_valid", "test_of_best_valid"}`` (scores) of the best known entry, or None when unknown."""
        return None


def check_objective(obj) -> None:
    """``TypeError`` naming what ``obj`` lacks of the objective contract."""
    missing = [a for a in REQUIRED if not hasattr(obj, a)]
    if missing:
        raise TypeError(
            f"{type(obj).__name__} is not an objective: it lacks {missing} "
            "(see spaces/benchmarks/objective.py for the contract)"
        )


def fidelity_budgets(obj) -> tuple[float, ...]:
    """The budgets of ``obj``'s fidelities, increasing; ``(1.0,)`` (one full evaluation) without fidelities."""
    budgets = tuple(float(b) for b in getattr(obj, "fidelities", ()) or ())
    return budgets or (1.0,)


def check_fidelities(name: str, fidelities, unit: str) -> tuple[float, ...]:
    """``fidelities`` as a tuple of floats, or a ``ValueError`` unless they are a sequence of finite, positive,
    increasing numbers."""
    try:
        if isinstance(fidelities, (str, bytes)) or isinstance(fidelities, dict):
            raise TypeError
        budgets = tuple(float(b) for b in fidelities)
    except (TypeError, ValueError):
        raise ValueError(
            f"{name}: fidelities must be a list of increasing budgets, e.g. (12, 200), got {fidelities!r}"
        ) from None
    if not budgets:
        raise ValueError(f"{name}: fidelities is empty; give the budgets in increasing order, e.g. (12, 200)")
    if not all(np.isfinite(b) and b > 0 for b in budgets) or any(a >= b for a, b in zip(budgets, budgets[1:])):
        raise ValueError(f"{name}: fidelities must be finite, positive and increasing, got {budgets}")
    if not unit:
        raise ValueError(f"{name}: say what the fidelities count (fidelity_unit, e.g. 'epochs')")
    return budgets
