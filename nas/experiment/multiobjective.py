"""Multi-objective and constrained experiments: their config fields, summary sections and tables.

Config fields (``nas.experiment.config``):

    metrics             names of the objective's metrics searched beside the score, e.g. ("latency",):
                        every searcher's history records them, a multi-objective searcher is told
                        [score, metrics...] (num_objectives = 1 + len(metrics)), and the reports add the
                        hypervolume and its gap to the true front (``nas.experiment.pareto_report``) and
                        pareto.png
    searchers.<label>.constraints   an entry's constraints, e.g. "latency<=0.0095" (not a searcher option:
                        the experiment wraps the objective for that entry, ``spaces.benchmarks.constrained``);
                        the reports add, for every constraint set of the config, the incumbent under it of
                        the searchers run under it and of the unconstrained ones (from the recorded scores
                        and metrics); the fronts and hypervolumes are those of the unconstrained searchers
    searchers.<label>.constraint_mode   "penalty" (default) or "filter"

A run records ``metrics`` and every constrained metric (``recorded_metrics``): a multi-objective searcher
is told the first ``num_objectives - 1`` of them, which are ``config.metrics``.
"""

from __future__ import annotations

import numpy as np

from nas.engine.incumbent import top_fidelity_score
from nas.experiment import cost_axis
from nas.experiment import pareto_report as pr
from spaces.benchmarks.constrained import parse_constraints
from spaces.benchmarks.metrics import metric

ENTRY_FIELDS = ("constraints", "constraint_mode")  # entry keys the experiment reads, not searcher options


def config_metrics(cfg: dict) -> tuple[str, ...]:
    """``config.metrics`` as a tuple of names (a comma-separated string or a sequence)."""
    value = cfg.get("metrics") or ()
    if isinstance(value, str):
        value = [v for v in value.split(",")]
    return tuple(str(v).strip() for v in value if str(v).strip())


def entry_constraints(entry: dict) -> tuple[tuple[str, float], ...]:
    """An entry's parsed constraints (``()`` when it has none)."""
    text = entry.get("constraints") or ""
    return parse_constraints(text) if str(text).strip() else ()


def recorded_metrics(cfg: dict, entries: dict[str, dict]) -> tuple[str, ...]:
    """``config.metrics``, then every constrained metric of any entry not among them."""
    names = list(config_metrics(cfg))
    for entry in entries.values():
        names += [n for n, _ in entry_constraints(entry) if n not in names]
    return tuple(names)


def constraint_sets(entries: dict[str, dict]) -> list[str]:
    """The distinct constraint strings of the entries, in order."""
    out = []
    for entry in entries.values():
        cons = entry_constraints(entry)
        text = ",".join(f"{n}<={v:g}" for n, v in cons)
        if cons and text not in out:
            out.append(text)
    return out


def pareto_summary(bench, histories: dict[str, dict], names: tuple[str, ...], max_queries: int) -> tuple[dict, dict]:
    """``summary["pareto"]`` (the problem, each searcher's hypervolume and gap at 25/50/100 % of the budget)
    and the per-searcher data the figure draws (gap curves, final fronts)."""
    from spaces.benchmarks.objective import fidelity_budgets

    budgets = fidelity_budgets(bench)
    problem = pr.table_problem(bench, names) or pr.pooled_problem(getattr(bench, "base", bench), histories, names)
    per, drawn = {}, {}
    # the summed-cost axis ends where the median trial of the costliest searcher spends its budget
    ends = [np.median(np.sum(np.asarray(h["cost"], np.float64), -1)) for h in histories.values()]
    cost_grid = np.linspace(0.0, max(ends), 121)[1:]
    for label, h in histories.items():
        res = pr.searcher_pareto(h, problem, budgets, max_queries, cost_grid)
        fronts = pr.final_fronts(h, problem, budgets, max_queries)
        per[label] = {"fractions": res["fractions"], "hypervolume": res["hypervolume"], "gap": res["gap"],
                      "num_trials": len(fronts), "front_size_mean": float(np.mean([len(f) for f in fronts]))}
        drawn[label] = {k: res[k] for k in ("curve_x", "curve_gap", "cost_x", "cost_gap")} | {"fronts": fronts}
    base = getattr(bench, "base", bench)
    units = [metric(base, n).unit for n in names]
    summary = {
        "objectives": [base.report_name] + [f"{n} ({u})" for n, u in zip(names, units)],
        "signs": list(problem.signs),
        "ideal": problem.ideal,
        "reference": problem.reference,
        "reference_source": problem.source,
        "true_front_size": int(len(problem.front)),
        "true_hypervolume": problem.hv_true,
        "note": (
            "hypervolume of the front found (non-dominated by validation score and metrics, reported values), "
            "each objective normalized to ideal = 0 and reference = 1 (reference: the median error, and the "
            "front's costliest network below it plus 10 % of the front's range); gap = 100 * (1 - HV / HV of "
            "the true front), the true front being the "
            + ("table's" if problem.source == "table" else "pooled front of every searcher's evaluations")
        ),
        "searchers": per,
    }
    return summary, {"problem": problem, "searchers": drawn}


def constraint_summary(
    bench, histories: dict[str, dict], entries: dict[str, dict], sets: list[str], max_queries: int
) -> dict:
    """For every constraint set: the incumbent under it (the best validation score among the recorded queries
    that satisfy it; reported metric) at ``FRACTIONS`` of the budget, of the searchers run under that set and of
    the unconstrained ones (a searcher under other limits saw penalized scores, not comparable here), and the
    table's best feasible configuration."""
    from spaces.benchmarks.objective import fidelity_budgets

    budgets = fidelity_budgets(bench)
    base = getattr(bench, "base", bench)
    out = {}
    for text in sets:
        cons = parse_constraints(text)
        per = {}
        for label, h in histories.items():
            own = entry_constraints(entries.get(label, {}))
            if own and own != cons:
                continue
            feasible = np.ones(np.shape(h["score"]), bool)
            for n, limit in cons:
                feasible &= np.nan_to_num(np.asarray(h["metrics"][n], np.float64), nan=np.inf) <= limit
            score = np.where(feasible, h["score"], -np.inf)
            if "fidelity" in h:
                score = top_fidelity_score(score, h["fidelity"], len(budgets))
            axes = cost_axis.running_axes({**h, "score": score}, budgets[-1], len(budgets))
            inc = cost_axis.incumbent_at(axes, "full", [f * max_queries for f in pr.FRACTIONS])
            rep = np.where(np.isfinite(inc), base.report(np.where(np.isfinite(inc), inc, 0.0)), np.nan)
            with np.errstate(all="ignore"):
                per[label] = {"fractions": list(pr.FRACTIONS), "mean": np.nanmean(rep, 0), "std": np.nanstd(rep, 0),
                              "trials_with_incumbent": np.sum(np.isfinite(rep), 0)}  # fmt: skip
        best = None
        if hasattr(base, "columns") and hasattr(base, "mean_valid"):
            from spaces.benchmarks.constrained import constrain

            b = constrain(base, cons, "filter").best_valid()
            if b is not None:
                best = float(base.report(b["test_of_best_valid"] if base.has_test else b["best_valid"]))
        feasible_share = None
        if hasattr(base, "columns"):
            ok = np.ones(base.size, bool)
            for n, limit in cons:
                ok &= np.asarray(base.columns[n]) <= limit
            feasible_share = float(ok.mean())
        out[text] = {"table_best": best, "feasible_share": feasible_share, "searchers": per}
    return out


def format_pareto_table(summary: dict) -> str:
    """Markdown: each searcher's hypervolume gap (%) at 25/50/100 % of the budget, mean +- s.e."""
    p = summary["pareto"]
    fr = [f"{int(f * 100)} %" for f in pr.FRACTIONS]
    lines = [f"| searcher | {' | '.join(fr)} | trials | front size |", "|" + "---|" * (len(fr) + 3)]
    for label, s in p["searchers"].items():
        g = s["gap"]
        cells = [f"{m:.2f} +- {e:.2f}" for m, e in zip(g["mean"], g["se"])]
        lines.append(f"| {label} | {' | '.join(cells)} | {s['num_trials']} | {s['front_size_mean']:.1f} |")
    head = (f"hypervolume gap (%) to the {'true' if p['reference_source'] == 'table' else 'pooled'} front "
            f"({summary['benchmark']}, {' vs '.join(p['objectives'])}), mean +- s.e.")  # fmt: skip
    return head + "\n" + "\n".join(lines)


def format_constraint_table(summary: dict) -> str:
    """Markdown: per constraint set, each searcher's incumbent under it at 25/50/100 % of the budget."""
    out = []
    for text, c in summary["constraints"].items():
        fr = [f"{int(f * 100)} %" for f in pr.FRACTIONS]
        best = "" if c["table_best"] is None else f"; table's best feasible: {c['table_best']:.4g}"
        share = "" if c["feasible_share"] is None else f", {100 * c['feasible_share']:.2f} % of the table feasible"
        out.append(f"{summary['metric']} of the incumbent under {text}{share}{best}")
        out.append(f"| searcher | {' | '.join(fr)} | trials with one |")
        out.append("|" + "---|" * (len(fr) + 2))
        for label, s in c["searchers"].items():
            cells = [f"{m:.4g} +- {sd:.2g}" if np.isfinite(m) else "-" for m, sd in zip(s["mean"], s["std"])]
            out.append(f"| {label} | {' | '.join(cells)} | {int(s['trials_with_incumbent'][-1])} |")
    return "\n".join(out)
