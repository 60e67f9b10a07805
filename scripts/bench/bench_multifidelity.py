"""Speed of the multi-fidelity engine: Hyperband and ASHA, S seeds on NAS-Bench-201 (12 and 200 epochs) in
one compiled call (``jax.jit(jax.vmap(make_mf_search(searcher)))``), beside the Syne Tune peer (its ASHA and
asynchronous Hyperband in its simulator, ``nas.experiment.syne_tune_peer``) on the same table and budget.

    python -m scripts.bench.bench_multifidelity                        # cifar10, 500 seeds, 100 full trainings, W = 4
    python -m scripts.bench.bench_multifidelity --num_trials=100 --peer_seeds=10 --dataset=cifar100
    python -m scripts.bench.bench_multifidelity --peer_only                   # the peer alone

Prints, per searcher: compile time (the persistent compilation cache is disabled, so this is a real compile),
the evaluations per seed and the engine steps (one per finished evaluation, a bound the searcher derives),
run time of the S seeds after compilation (best and median of ``--repeats``, with the process CPU time, since
the machine may be shared), XLA's memory estimate of the program (arguments + outputs + temporaries), the
process's peak resident memory so far, the peer's time per seed (``--peer_seeds`` seeds run one after
another, as the peer runs) and the ratio of the peer's time per seed to ours (the compiled call's time over
S), and the mean test error of the final incumbent (the best configuration evaluated at 200 epochs) of both.
"""

from __future__ import annotations

import resource
import statistics
import time

import jax
import numpy as np
from absl import flags

from nas.experiment import cli

_DATASET = flags.DEFINE_enum("dataset", "cifar10", ["cifar10", "cifar100", "imagenet16"], "NAS-Bench-201 dataset.")
_TEST = flags.DEFINE_string("test_data", "../shared/data/nb201/nats_bench_test_acc.csv", "NB201 test accuracies.")
_FIDELITY = flags.DEFINE_string("fidelity_data", "../shared/data/nb201/mini_nb201_12epoch.pd", "12-epoch table.")
_SEARCHERS = flags.DEFINE_list("searchers", ["hyperband", "asha"], "Multi-fidelity searchers (peer: same name).")
_TRIALS = flags.DEFINE_integer("num_trials", 500, "Seeds in one compiled call.")
_PEER_SEEDS = flags.DEFINE_integer("peer_seeds", 20, "Seeds timed for the peer (it runs one seed at a time).")
_QUERIES = flags.DEFINE_integer("max_queries", 100, "Budget in full (200-epoch) trainings.")
_WORKERS = flags.DEFINE_integer("workers", 4, "Simulated workers W.")
_REPEATS = flags.DEFINE_integer("repeats", 3, "Timed repeats of the compiled call.")
_PEER_ONLY = flags.DEFINE_bool("peer_only", False, "Time the Syne Tune peer alone (no compiled searcher).")


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def final_test_error(bench, fidelity, score, report_score) -> float:
    """Mean over seeds of the reported test error of the last incumbent (best at the top fidelity)."""
    from nas.engine.incumbent import top_fidelity_score

    top = top_fidelity_score(np.asarray(score), np.asarray(fidelity), len(bench.fidelities))
    best = np.argmax(top, axis=1)
    rep = np.asarray(report_score)[np.arange(top.shape[0]), best]
    return float(np.mean(bench.report(rep)))


def time_ours(name: str, bench, keys, q: int, w: int) -> dict:
    """Compile and run ``name`` on ``len(keys)`` seeds in one call: times, memory, final test error."""
    from nas.engine.compile_policy import compiler_options
    from nas.engine.multi_fidelity_runner import make_mf_search
    from nas.searchers import make_searcher

    searcher = make_searcher(name, bench.space, fidelities=bench.fidelities, max_queries=q, workers=w)
    many = jax.jit(jax.vmap(make_mf_search(searcher), in_axes=(0, None)), compiler_options=compiler_options(searcher))
    t0 = time.perf_counter()
    compiled = many.lower(keys, bench).compile()
    compile_s = time.perf_counter() - t0
    mem = compiled.memory_analysis()
    times, cpu = [], []
    for _ in range(_REPEATS.value):
        t0, c0 = time.perf_counter(), time.process_time()
        hist = jax.block_until_ready(compiled(keys, bench))
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    out = {
        "compile_s": compile_s, "run_s": min(times), "median_s": statistics.median(times), "cpu_s": min(cpu),
        "xla_mib": (mem.argument_size_in_bytes + mem.output_size_in_bytes + mem.temp_size_in_bytes) / 2**20,
        "rss_mib": peak_rss_mib(), "err": final_test_error(bench, hist.fidelity, hist.score, hist.report_score),
    }  # fmt: skip
    evals = np.sum(np.asarray(hist.fidelity) >= 0, axis=1)
    print(f"{name}: compile {compile_s:.1f} s, run {out['run_s']:.3f} s (CPU {out['cpu_s']:.3f} s, median "
          f"{out['median_s']:.3f} s), XLA memory {out['xla_mib']:.0f} MiB, peak RSS {out['rss_mib']:.0f} MiB; "
          f"{evals.mean():.0f} evaluations per seed (at most {evals.max()}) in {searcher.num_steps} engine steps",
          flush=True)  # fmt: skip
    return out


def main(argv):
    del argv
    jax.config.update("jax_enable_compilation_cache", False)
    from nas.experiment import peers
    from spaces.benchmarks.registry import make_benchmark

    bench = make_benchmark(f"nb201/{_DATASET.value}", test_csv=_TEST.value, fidelity_data=_FIDELITY.value)
    s_count, q, w = _TRIALS.value, _QUERIES.value, _WORKERS.value
    keys = jax.random.split(jax.random.PRNGKey(0), s_count)
    print(f"{bench.name}: fidelities {bench.fidelities} {bench.fidelity_unit}, {s_count} seeds, budget {q} full "
          f"trainings, {w} workers, backend {jax.default_backend()}, {jax.device_count()} device(s)")  # fmt: skip
    rows = []
    for name in _SEARCHERS.value:
        ours = None if _PEER_ONLY.value else time_ours(name, bench, keys, q, w)
        peer = peers.make_peer("syne_tune", bench.space, fidelities=bench.fidelities, max_queries=q, workers=w,
                               scheduler=name, seeds_per_group=0)  # fmt: skip
        n_peer = _PEER_SEEDS.value
        t0, c0 = time.perf_counter(), time.process_time()
        ph = peers.run_peer(peer, bench, keys[:n_peer], progress=False)
        peer_s, peer_cpu = (time.perf_counter() - t0) / n_peer, (time.process_time() - c0) / n_peer
        peer_err = final_test_error(bench, ph.fidelity, ph.score, ph.report_score)
        evals = float(np.mean(np.sum(np.asarray(ph.fidelity) >= 0, axis=1)))
        print(f"{name}: peer {peer_s:.3f} s/seed (CPU {peer_cpu:.3f} s; {n_peer} seeds), {evals:.0f} evaluations "
              f"per seed, final test error {peer_err:.3f} %", flush=True)  # fmt: skip
        if ours is not None:
            ratio = peer_s / (ours["run_s"] / s_count)
            print(f"{name}: peer / ours per seed {ratio:,.0f}; final test error ours {ours['err']:.3f} %", flush=True)
            rows.append((name, ours, peer_s, peer_cpu, ratio, peer_err, n_peer))
    if not rows:
        return
    print()
    print(f"| searcher (W = {w}) | compile (s) | {s_count} seeds, one call (s) | CPU (s) | XLA memory (MiB) | "
          "peak RSS (MiB) | Syne Tune peer, per seed (s) | peer / ours, per seed | final test error ours / peer "
          "(%) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for name, o, ps, pc, ratio, pe, n in rows:
        print(f"| {name} | {o['compile_s']:.1f} | {o['run_s']:.2f} (median {o['median_s']:.2f}) | {o['cpu_s']:.2f} | "
              f"{o['xla_mib']:.0f} | {o['rss_mib']:.0f} | {ps:.2f} (CPU {pc:.2f}; {n} seeds) | {ratio:,.0f} | "
              f"{o['err']:.2f} / {pe:.2f} |")  # fmt: skip


if __name__ == "__main__":
    cli.run(main)
