"""Tables and anytime curves of the tuner comparison (``scripts/experiments/tuner_comparison.py``) from its workdir.

    python -m scripts.figures.tuner_comparison_figures --workdir=/tmp/tuner_cmp --out=docs/figures/tuner_comparison.png
    python -m scripts.figures.tuner_comparison_figures --workdir=/tmp/tuner_cmp --setting=ray \
        --out=docs/figures/tuner_comparison_ray.png

Per run, the segments (each a training to a budget) in the order they ended: the compute is their summed
cost (iterations or epochs trained), the incumbent the configuration with the best validation error among the
segments that reached the top budget (the first of equals), and the reported figure its test error. The
target error of a task is the median, over the ``--target_from`` method's runs, of their final test error
(``--target_from=ray_asha_random``: random search with ASHA stopping, the plainest method of the set), or a
fixed value (``--target=naval:0.0005``: a test RMSE of 0.5e-3); the
time to target of a run is the wall time at which its incumbent's test error first is at or below it (never:
infinite; the median over runs is infinite unless more than half reach it). Tables: medians with quartiles over
runs (the spread between runs is large and skewed); the first result is the wall time at which the first
training ended (start-up: workers, imports, compilation); CPU time of the run's process tree beside wall time.
The figure: median incumbent test error (quartile bands) against wall time and against compute.
"""

from __future__ import annotations

import glob
import json
import os

import numpy as np
from absl import flags

from nas.experiment import cli
from spaces.files import save_figure

_WORKDIR = flags.DEFINE_string("workdir", None, "Workdir of scripts.experiments.tuner_comparison.", required=True)
_SETTING = flags.DEFINE_string("setting", "local", "local (W = 4 processes) or ray (the Ray adapter).")
_OUT = flags.DEFINE_string("out", "", "PNG of the anytime curves (empty: no figure).")
_TARGET = flags.DEFINE_string("target_from", "ray_asha_random", "The method whose median final error is the target.")
_TARGET_VALUE = flags.DEFINE_list("target", [], "Fixed targets instead, task:test error (e.g. naval:0.0005).")
NAMES = {
    "asha": "ASHA (ours)",
    "hyperband": "Hyperband (ours)",
    "bohb": "BOHB (ours)",
    "mf_bananas": "mf-BANANAS (ours)",
    "optuna_hyperband_tpe": "Optuna HyperbandPruner + TPE",
    "ray_asha_random": "Ray Tune ASHAScheduler + random",
    **{f"ray_adapter_{s}": f"{s} (ours, Ray adapter)" for s in ("asha", "hyperband", "bohb", "mf_bananas")},
}
UNITS = {"naval": ("test RMSE (x1e-3)", 1e3), "digits": ("test error (%)", 1e2)}


def curve(run: dict) -> dict[str, np.ndarray]:
    """Per segment, by end time: ``t`` (s), ``compute`` (summed cost) and the incumbent's ``test`` error."""
    segs, top = run["segments"], run["fidelities"][-1]
    t = np.asarray([s["t"] for s in segs], np.float64)
    compute = np.cumsum([s["cost"] for s in segs])
    best, test, out = np.inf, np.inf, []
    for s in segs:
        if s["budget"] >= top and np.isfinite(s["valid"]) and s["valid"] < best:
            best, test = s["valid"], s["test"]
        out.append(test)
    return {"t": t, "compute": compute, "test": np.asarray(out, np.float64)}


def at(c: dict, axis: str, points: np.ndarray) -> np.ndarray:
    """The incumbent's test error at each of ``points`` on ``axis`` (inf before the first top-budget result)."""
    idx = np.searchsorted(c[axis], points, side="right") - 1
    return np.where(idx >= 0, c["test"][np.maximum(idx, 0)], np.inf)


def time_to(c: dict, target: float) -> float:
    hit = np.nonzero(c["test"] <= target)[0]
    return float(c["t"][hit[0]]) if len(hit) else np.inf


def load(workdir: str, setting: str) -> dict:
    """{task: {method: [run, ...]}} of one setting."""
    out: dict = {}
    for path in sorted(glob.glob(os.path.join(workdir, "runs", f"{setting}_*.json"))):
        with open(path) as f:
            run = json.load(f)
        out.setdefault(run["task"], {}).setdefault(run["method"], []).append(run)
    return out


def quartiles(x, scale: float = 1.0, digits: int = 2) -> str:
    x = np.asarray(x, np.float64) * scale
    if not np.all(np.isfinite(x)):
        q = np.percentile(np.where(np.isfinite(x), x, 1e300), [25, 50, 75])
        f = [("inf" if v > 1e290 else f"{v:.{digits}f}") for v in q]
        return f"{f[1]} [{f[0]}, {f[2]}]"
    q = np.percentile(x, [25, 50, 75])
    return f"{q[1]:.{digits}f} [{q[0]:.{digits}f}, {q[2]:.{digits}f}]"


def table(task: str, methods: dict, target: float) -> list[str]:
    label, scale = UNITS[task]
    unit = "iterations" if task == "naval" else "epochs"
    lines = [
        f"| {task}: method | runs | final {label} | time to target (s) | reached | first result (s) | wall (s) | "
        f"CPU (s) | compute ({unit}) | trainings | configurations |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for method, runs in methods.items():
        curves = [curve(r) for r in runs]
        final = [c["test"][-1] for c in curves]
        ttt = [time_to(c, target) for c in curves]
        reached = sum(np.isfinite(ttt))
        cells = [
            NAMES.get(method, method),
            str(len(runs)),
            quartiles(final, scale),
            quartiles(ttt, digits=0),
            f"{reached}/{len(runs)}",
            quartiles([c["t"][0] for c in curves], digits=0),
            quartiles([r["wall_s"] for r in runs], digits=0),
            quartiles([r.get("cpu_s", np.nan) for r in runs], digits=0),
            f"{np.median([c['compute'][-1] for c in curves]):.0f}",
            f"{np.median([len(r['segments']) for r in runs]):.0f}",
            f"{np.median([len({tuple(s['config']) for s in r['segments']}) for r in runs]):.0f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def figure(data: dict, out: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    tasks = list(data)
    fig, axes = plt.subplots(len(tasks), 2, figsize=(11, 3.6 * len(tasks)), squeeze=False)
    for row, task in enumerate(tasks):
        label, scale = UNITS[task]
        for col, axis in enumerate(("t", "compute")):
            ax = axes[row, col]
            plotted = False
            for method, runs in data[task].items():
                curves = [curve(r) for r in runs]
                hi = max(float(c[axis][-1]) for c in curves)
                points = np.linspace(0, hi, 200)
                vals = np.stack([at(c, axis, points) for c in curves]) * scale
                q = np.percentile(np.where(np.isfinite(vals), vals, 1e300), [25, 50, 75], axis=0)
                has = q[1] < 1e290  # the median run has an incumbent (with half the runs at inf, it is inf)
                plotted |= bool(has.any())
                ours = not method.startswith(("optuna", "ray_asha"))
                line = ax.plot(points[has], q[1][has], label=NAMES.get(method, method), ls="-" if ours else "--")
                ax.fill_between(points[has], q[0][has], np.minimum(q[2], q[1] * 10)[has], alpha=0.15,
                                color=line[0].get_color())  # fmt: skip
            if plotted:  # a log axis needs a value: a budget too small for a top-budget result leaves none
                ax.set_yscale("log")
            else:
                ax.text(0.5, 0.5, "no top-budget result yet", transform=ax.transAxes, ha="center")
            if axis == "compute":
                ax.xaxis.set_major_formatter(matplotlib.ticker.EngFormatter())  # 40k, not 40000 (labels collide)
            unit = "iterations" if task == "naval" else "epochs"
            ax.set_xlabel("wall-clock time (s)" if axis == "t" else f"compute (training {unit}, summed)")
            ax.set_ylabel(f"{task}: incumbent {label}")
            ax.grid(alpha=0.3)
        axes[row, 0].legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, out)


def main(argv):
    del argv
    data = load(_WORKDIR.value, _SETTING.value)
    for task, methods in data.items():
        label, scale = UNITS[task]
        fixed = dict(item.split(":") for item in _TARGET_VALUE.value)
        if task in fixed:
            target = float(fixed[task])
            print(f"\n{task}: target {label} {target * scale:.3g} (given)\n")
        else:
            ref = methods.get(_TARGET.value) or next(iter(methods.values()))
            target = float(np.median([curve(r)["test"][-1] for r in ref]))
            print(f"\n{task}: target {label} {target * scale:.3g} (the median final error of {_TARGET.value})\n")
        print("\n".join(table(task, methods, target)))
    if _OUT.value:
        figure(data, _OUT.value)
        print(f"\nwrote {_OUT.value}")


if __name__ == "__main__":
    cli.run(main)
