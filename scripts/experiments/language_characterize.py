r"""Figure 8 of Negrinho et al. (2019) at digits scale: sampled architectures of each Table 1 space.

Section 7.1: "we randomly sample 128 architectures from each search space and train them for 25
epochs with Adam with a learning rate of 0.001 ... a simple characterization of the search spaces
in terms of the number of parameters, training times, and validation performances". Here the
spaces of ``spaces.language.table1`` are trained on scikit-learn digits (8x8, 10 classes) for
``--epochs`` epochs; each architecture's parameters, training seconds (its share of its compiled
group's wall time, compilation excluded) and validation/test accuracy are written to
``--out`` (JSON, rewritten after every batch, so a stopped run keeps what it trained), and
``--figure`` plots validation accuracy against parameters and against training time.

    python -m scripts.experiments.language_characterize --num_samples=128 --epochs=5 \
        --out=docs/figures/language_figure8.json --figure=docs/figures/language_figure8.png

``--plot_only`` redraws the figure from ``--out``.
"""

from __future__ import annotations

import json
import os
import time

import jax
import numpy as np
from absl import flags

from nas.experiment import cli
from spaces.files import save_figure, write_text_atomic
from spaces.language import table1
from spaces.language.datasets import load
from spaces.language.training import TrainConfig, Trainer

FLAGS = flags.FLAGS
flags.DEFINE_list("spaces", ["genetic", "flat", "nasbench", "nasnet"], "Table 1 spaces (spaces.language.table1)")
flags.DEFINE_integer("num_samples", 128, "architectures sampled per space")
flags.DEFINE_integer("epochs", 5, "training epochs per architecture (the paper: 25)")
flags.DEFINE_integer("batch", 16, "architectures per trainer call")
flags.DEFINE_integer("seed", 0, "sampling and training seed")
flags.DEFINE_float("learning_rate", 1e-3, "Adam's step size (the paper: 0.001)")
flags.DEFINE_integer(
    "xla_optimization_level", 1, "XLA backend optimization level of the training programs (-1: XLA's default)"
)
flags.DEFINE_string("out", "docs/figures/language_figure8.json", "results (JSON)")
flags.DEFINE_string("figure", "docs/figures/language_figure8.png", "figure (PNG); empty: none")
flags.DEFINE_bool("plot_only", False, "only redraw --figure from --out")


def characterize(
    name: str,
    num_samples: int,
    epochs: int,
    batch: int,
    seed: int,
    lr: float,
    sink,
    level: int | None = None,
    done: dict | None = None,
) -> dict:
    """Trains ``num_samples`` uniform samples of space ``name``; ``sink(partial)`` after each batch.

    ``done``: the partial result of a stopped run with the same settings; its samples are kept and the
    run continues with the next ones (the samples are a function of ``seed`` and ``num_samples``).
    """
    flat = table1.table1_flat(name)
    data = load("digits")
    trainer = Trainer(
        flat,
        data,
        TrainConfig(epochs=epochs, batch_size=64, learning_rate=lr, xla_optimization_level=level),
        max_programs=8,
    )
    keys = jax.random.split(jax.random.PRNGKey(seed), num_samples)
    tokens = np.asarray(jax.vmap(flat.sample)(keys))
    res = {"space": name, "epochs": epochs, "valid": [], "test": [], "train_s": [], "params": [], "specs": []}
    before = {"programs_compiled": 0, "compile_s_total": 0.0, "train_s_total": 0.0, "wall_s": 0.0}
    same = {"epochs": epochs, "seed": seed, "num_samples": num_samples, "learning_rate": lr}
    if done and all(done.get(k) == v for k, v in same.items()):
        res.update({k: list(done[k]) for k in ("valid", "test", "train_s", "params", "specs")})
        before = {k: done.get(k, 0) for k in before}
    res.update(same)
    start = time.perf_counter()
    for i in range(len(res["valid"]), num_samples, batch):
        rows = tokens[i : i + batch]
        r = trainer.evaluate(rows, np.full(len(rows), seed))
        res["valid"] += [float(v) for v in r["valid"]]
        res["test"] += [float(v) for v in r["test"]]
        res["train_s"] += [float(v) for v in r["cost"]]
        res["params"] += [int(v) for v in r["params"]]
        res["specs"] += [flat.to_spec(t)["values"] for t in rows]
        res["programs_compiled"] = before["programs_compiled"] + trainer.stats["programs_compiled"]
        res["compile_s_total"] = before["compile_s_total"] + trainer.stats["compile_s"]
        res["train_s_total"] = before["train_s_total"] + trainer.stats["train_s"]
        res["wall_s"] = before["wall_s"] + time.perf_counter() - start
        sink(res)
        print(
            f"{name}: {len(res['valid'])}/{num_samples} trained, {res['programs_compiled']} programs, "
            f"compile {res['compile_s_total']:.0f}s, train {res['train_s_total']:.0f}s",
            flush=True,
        )
    return res


def plot(results: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for name, r in results.items():
        v = np.asarray(r["valid"])
        ok = np.isfinite(v)
        axes[0].scatter(np.asarray(r["params"])[ok], v[ok], s=10, label=f"{name} ({ok.sum()})", alpha=0.7)
        axes[1].scatter(np.asarray(r["train_s"])[ok], v[ok], s=10, label=name, alpha=0.7)
    epochs = next(iter(results.values()))["epochs"] if results else 0
    axes[0].set(xscale="log", xlabel="parameters", ylabel=f"validation accuracy ({epochs} epochs)")
    axes[1].set(xscale="log", xlabel=f"training seconds ({epochs} epochs, CPU)", ylabel="validation accuracy")
    axes[0].legend(fontsize=8)
    fig.suptitle("Table 1 spaces on digits (8x8): sampled architectures (Negrinho et al. 2019, Figure 8)")
    save_figure(fig, path)


def main(argv):
    del argv
    results = {}
    if os.path.exists(FLAGS.out):
        with open(FLAGS.out) as f:
            results = json.load(f)
    if not FLAGS.plot_only:
        os.makedirs(os.path.dirname(FLAGS.out) or ".", exist_ok=True)
        for name in FLAGS.spaces:
            if name in results and len(results[name]["valid"]) >= FLAGS.num_samples:
                continue  # already trained (rerun with another --out to redo)
            level = None if FLAGS.xla_optimization_level < 0 else FLAGS.xla_optimization_level

            def sink(res, name=name):
                results[name] = res
                write_text_atomic(FLAGS.out, json.dumps(results))

            args = (FLAGS.num_samples, FLAGS.epochs, FLAGS.batch, FLAGS.seed, FLAGS.learning_rate, sink, level)
            characterize(name, *args, done=results.get(name))
    for name, r in results.items():
        v = np.asarray(r["valid"])
        ok = np.isfinite(v)
        best = int(np.argmax(np.where(ok, v, -np.inf)))
        print(
            f"{name}: n={ok.sum()} valid mean {v[ok].mean():.3f} max {v[ok].max():.3f} "
            f"(test of best {r['test'][best]:.3f}) "
            f"params median {int(np.median(r['params']))} train s/arch median {np.median(r['train_s']):.3f} "
            f"programs {r.get('programs_compiled')} compile {r.get('compile_s_total', 0):.0f}s "
            f"train {r.get('train_s_total', 0):.0f}s"
        )
    if FLAGS.figure:
        plot(results, FLAGS.figure)


if __name__ == "__main__":
    cli.run(main)
