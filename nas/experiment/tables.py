"""The text tables of a many-seed comparison (``scripts.train`` prints ``format_table``).

A cell is ``mean +- std`` over the trials (population std, as ``summary.json`` holds it) or ``mean +- s.e.``
(``spread="se"``: the sample std over ``sqrt(n)``), and every table's title says which. Where only some
trials have a result at a point (a multi-fidelity run before its first top-fidelity result) the cell says
how many; where none has one yet it reads "no result yet". The compute table's cost and wall-clock columns
are in the objective's ``cost_unit`` (``spaces.benchmarks.objective``).
"""

from __future__ import annotations

import math

SPREADS = {"std": "std", "se": "s.e."}  # what a table's +- is: the std over trials or the standard error
UNKNOWN_COST_UNIT = "objective's cost units"


def spread_cell(mean: float, std: float, n: int, total: int, spread: str = "std") -> str:
    """One table cell: ``mean +- std`` (``std``: over the ``n`` trials with a result, ``ddof=0``) or ``mean +-
    s.e.`` (the sample std over ``sqrt(n)``), how many of the ``total`` trials had a result where not all, and
    "no result yet" where none had."""
    if n == 0 or not math.isfinite(mean):
        return "no result yet"
    part = "" if n == total else f" ({n} of {total} trials)"
    if spread == "se":
        return f"{mean:.4g}{part}" if n < 2 else f"{mean:.4g} +- {std / math.sqrt(n - 1):.2g}{part}"
    return f"{mean:.4g} +- {std:.2g}{part}"


def cost_unit(summary: dict) -> str:
    """The unit of the cost and wall-clock figures (the objective's ``cost_unit``)."""
    return summary.get("cost_unit") or UNKNOWN_COST_UNIT


def format_table(summary: dict, at=None, spread: str = "std") -> str:
    """Markdown table: mean +- std (``spread="se"``: +- standard error) of the reported metric at the given
    query counts; the title says which.

    Default columns: a third, two thirds and all of the budget (50/100/150 for 150 queries),
    snapped to the reported query points; 4 significant digits (MSEs near 1e-5 stay readable).
    A config on a benchmark with fidelities gets the compute table (``format_budget_table``).
    """
    if spread not in SPREADS:
        raise ValueError(f"spread must be one of {list(SPREADS)}, got {spread!r}")
    if summary.get("fidelities") and at is None:
        return format_budget_table(summary, spread)
    points = summary["searchers"][next(iter(summary["searchers"]))]["queries"] if summary["searchers"] else []
    if at is None:
        m = summary["max_queries"]
        at = sorted({min(points, key=lambda p, q=q: abs(p - q)) for q in (m / 3, 2 * m / 3, m)}) if points else [m]
    at = [q for q in at if q <= summary["max_queries"]] or [summary["max_queries"]]
    head = f"| searcher | {' | '.join(f'{q} queries' for q in at)} | trials | protocol |"
    lines = [head, "|" + "---|" * (len(at) + 3)]
    for label, s in summary["searchers"].items():
        cells = []
        n_with = s.get("trials_with_incumbent", [s["num_trials"]] * len(s["queries"]))
        for q in at:
            if q in s["queries"]:
                i = s["queries"].index(q)
                cells.append(spread_cell(float(s["mean"][i]), float(s["std"][i]), int(n_with[i]), s["num_trials"],
                                         spread))  # fmt: skip
            else:
                cells.append("-")
        lines.append(f"| {label} | {' | '.join(cells)} | {s['num_trials']} | {summary['protocol']} |")
    title = f"{summary['metric']} of the incumbent ({summary['benchmark']}), mean +- {SPREADS[spread]} over trials"
    return title + "\n" + "\n".join(lines)


def format_budget_table(summary: dict, spread: str = "std") -> str:
    """Markdown table: the reported metric (mean +- std, or +- s.e.) at 10/25/50/100 % of the compute budget,
    and the cost and simulated wall-clock each searcher spent on the whole budget (mean over trials, in the
    objective's cost unit)."""
    first = next(iter(summary["searchers"].values()))["budget"]
    fracs = [f"{int(round(f * 100))} %" for f in first["fractions"]]
    unit = cost_unit(summary)
    head = (f"| searcher | workers | {' | '.join(fracs)} | cost at 100 % ({unit}) | wall-clock at 100 % ({unit}) "
            "| trials |")  # fmt: skip
    lines = [head, "|" + "---|" * (len(fracs) + 5)]
    for label, s in summary["searchers"].items():
        b = s["budget"]
        cells = [
            spread_cell(float(mean), float(std), int(n), s["num_trials"], spread)
            for mean, std, n in zip(b["mean"], b["std"], b["trials_with_incumbent"])
        ]
        spent = f"{b['cost_mean'][-1]:.4g} | {b['wallclock_mean'][-1]:.4g}"
        lines.append(f"| {label} | {b['workers']} | {' | '.join(cells)} | {spent} | {s['num_trials']} |")
    fid_unit = summary.get("fidelity_unit", "")
    top = summary["fidelities"][-1] if summary.get("fidelities") else 1
    return (
        f"{summary['metric']} of the incumbent ({summary['benchmark']}) against compute, mean +- "
        f"{SPREADS[spread]} over trials: budget {summary['max_queries']} full evaluations ({top:g} {fid_unit} each)\n"
        + "\n".join(lines)
    )
