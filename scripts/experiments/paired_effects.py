"""Paired effects of a workdir's searchers against one of them (the same trial keys).

    python -m scripts.experiments.paired_effects --workdir /tmp/paper_remaade --reference remaade --at 50,150

Every searcher of a ``scripts.train`` workdir runs trial ``i`` from the same key (``config.seed``), so
the difference of two searchers' reported metric (the incumbent's test error, validation MSE, ...;
``nas.engine.incumbent``) on trial ``i`` is a paired sample. For each query count of ``--at`` prints a
markdown table: searcher, trials, the metric's mean +- standard error, and the mean difference to the
reference +- its paired standard error with the t statistic (negative = a lower metric than the
reference's).
"""

from __future__ import annotations

import json
import os

import numpy as np
from absl import flags

from nas.experiment import cli


def reported_curves(workdir: str) -> tuple[dict, object, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The saved config, the benchmark, ``{label: f64[T, Q]}`` (each finished searcher's reported metric of
    the incumbent after every query: the reports' protocol, ``nas.experiment.report``) and ``{label:
    f32[T, Q]}`` (the scores the searcher was told)."""
    from nas.engine.incumbent import incumbent_scores
    from nas.experiment.config import build_benchmark
    from nas.experiment.workdir import Workdir

    wd = Workdir(workdir)
    config = wd.saved_config()
    if config is None:
        raise cli.ConfigError(f"{workdir} holds no config.json: not a scripts.train workdir; give a run's --workdir")
    bench = build_benchmark(config)
    curves, scores = {}, {}
    for label in config["searchers"]:
        if os.path.exists(wd.history_path(label)):
            h = wd.load_history(label)
            curves[label] = np.asarray(bench.report(incumbent_scores(h["score"], h["report_score"])), np.float64)
            scores[label] = h["score"]
    return config, bench, curves, scores


def mean_se(x: np.ndarray) -> tuple[float, float]:
    return float(np.mean(x)), float(np.std(x, ddof=1) / np.sqrt(len(x)))


def paired_table(curves: dict[str, np.ndarray], reference: str, q: int, metric: str) -> str:
    """Markdown rows: each searcher's metric after ``q`` queries and its paired difference to ``reference``."""
    ref = curves[reference][:, q - 1]
    rows = [f"| searcher | trials | {metric} at {q} | difference to {reference} | t |", "|---|---|---|---|---|"]
    for label, c in curves.items():
        m, se = mean_se(c[:, q - 1])
        if label == reference:
            rows.append(f"| {label} | {len(c)} | {m:.4g} +- {se:.2g} | | |")
            continue
        if len(c) != len(ref):
            raise cli.ConfigError(f"{label} has {len(c)} trials, {reference} {len(ref)}: not paired; compare runs of "
                                  "one config (the same trial keys)")  # fmt: skip
        d, dse = mean_se(c[:, q - 1] - ref)
        t = d / dse if dse > 0 else float("nan")
        rows.append(f"| {label} | {len(c)} | {m:.4g} +- {se:.2g} | {d:+.3g} +- {dse:.2g} | {t:+.2f} |")
    return "\n".join(rows)


def main(argv):
    del argv
    f = flags.FLAGS
    config, bench, curves, _ = reported_curves(f.workdir)
    if f.reference not in curves:
        raise cli.ConfigError(f"--reference={f.reference!r}: the finished searchers are {sorted(curves)}; name one")
    print(f"{config['benchmark']}, {f.workdir}: {json.dumps({k: config[k] for k in ('seed', 'max_queries')})}")
    for q in [int(a) for a in f.at] or [int(config["max_queries"])]:
        print(f"\n{paired_table(curves, f.reference, q, bench.report_name)}")


if __name__ == "__main__":  # flags defined here: scripts.figures.remaade_long_figures imports this module's functions
    flags.DEFINE_string("workdir", "", "A finished (or partly finished) scripts.train workdir.")
    flags.DEFINE_string("reference", "", "The label the others are compared with.")
    flags.DEFINE_list("at", [], "Query counts (default: the run's budget).")
    cli.run(main)
