"""Speed of the multi-fidelity engine: Hyperband and ASHA, S seeds on NAS-Bench-201 (12 and 200 epochs) in
one compiled call (``jax.jit(jax.vmap(make_mf_search(searcher)))``), beside the Syne Tune peer (its ASHA and
asynchronous Hyperband in its simulator, ``nas.experiment.syne_tune_peer``) on the same table and budget.

    python -m scripts.bench_multifidelity                        # cifar10, 500 seeds, 100 full trainings, W = 4
    python -m scripts.bench_multifidelity --num_trials=100 --peer_seeds=10 --dataset=cifar100

Prints, per searcher: compile time (the persistent compilation cache is disabled, so this is a real compile),
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
from absl import app, flags

_DATASET = flags.DEFINE_enum("dataset", "cifar10", ["cifar10", "cifar100", "imagenet16"], "NAS-Bench-201 dataset.")
_TEST = flags.DEFINE_string("test_data", "../shared/data/nb201/nats_bench_test_acc.csv", "NB201 test accuracies.")
_FIDELITY = flags.DEFINE_string("fidelity_data", "../shared/data/nb201/mini_nb201_12epoch.pd", "12-epoch table.")
_SEARCHERS = flags.DEFINE_list("searchers", ["hyperband", "asha"], "Multi-fidelity searchers (peer: same name).")
_TRIALS = flags.DEFINE_integer("num_trials", 500, "Seeds in one compiled call.")
_PEER_SEEDS = flags.DEFINE_integer("peer_seeds", 20, "Seeds timed for the peer (it runs one seed at a time).")
_QUERIES = flags.DEFINE_integer("max_queries", 100, "Budget in full (200-epoch) trainings.")
_WORKERS = flags.DEFINE_integer("workers", 4, "Simulated workers W.")
_REPEATS = flags.DEFINE_integer("repeats", 3, "Timed repeats of the compiled call.")


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def final_test_error(bench, fidelity, score, report_score) -> float:
    """Mean over seeds of the reported test error of the last incumbent (best at the top fidelity)."""
    from nas.engine.incumbent import top_fidelity_score

    top = top_fidelity_score(np.asarray(score), np.asarray(fidelity), len(bench.fidelities))
    best = np.argmax(top, axis=1)
    rep = np.asarray(report_score)[np.arange(top.shape[0]), best]
    return float(np.mean(bench.report(rep)))


def main(argv):
    del argv
    jax.config.update("jax_enable_compilation_cache", False)
    from nas.core.searcher import make_searcher
    from nas.engine.multi_fidelity_runner import make_mf_search
    from nas.experiment import peers
    from spaces.benchmarks.registry import make_benchmark

    bench = make_benchmark(f"nb201/{_DATASET.value}", test_csv=_TEST.value, fidelity_data=_FIDELITY.value)
    s_count, q, w = _TRIALS.value, _QUERIES.value, _WORKERS.value
    keys = jax.random.split(jax.random.PRNGKey(0), s_count)
    print(f"{bench.name}: fidelities {bench.fidelities} {bench.fidelity_unit}, {s_count} seeds, budget {q} full "
          f"trainings, {w} workers, backend {jax.default_backend()}, {jax.device_count()} device(s)")  # fmt: skip
    rows = []
    for name in _SEARCHERS.value:
        searcher = make_searcher(name, bench.space, fidelities=bench.fidelities, max_queries=q, workers=w)
        many = jax.jit(
            jax.vmap(make_mf_search(searcher), in_axes=(0, None)), compiler_options=searcher.compiler_options()
        )
        t0 = time.perf_counter()
        compiled = many.lower(keys, bench).compile()
        compile_s = time.perf_counter() - t0
        mem = compiled.memory_analysis()
        xla_mib = (mem.argument_size_in_bytes + mem.output_size_in_bytes + mem.temp_size_in_bytes) / 2**20
        times, cpu = [], []
        for _ in range(_REPEATS.value):
            t0, c0 = time.perf_counter(), time.process_time()
            hist = jax.block_until_ready(compiled(keys, bench))
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        rss = peak_rss_mib()
        ours_err = final_test_error(bench, hist.fidelity, hist.score, hist.report_score)
        peer = peers.make_peer("syne_tune", bench.space, fidelities=bench.fidelities, max_queries=q, workers=w,
                               scheduler=name, seeds_per_group=0)  # fmt: skip
        n_peer = _PEER_SEEDS.value
        t0, c0 = time.perf_counter(), time.process_time()
        ph = peers.run_peer(peer, bench, keys[:n_peer], progress=False)
        peer_s, peer_cpu = (time.perf_counter() - t0) / n_peer, (time.process_time() - c0) / n_peer
        peer_err = final_test_error(bench, ph.fidelity, ph.score, ph.report_score)
        ours_per_seed = min(times) / s_count
        rows.append((name, compile_s, min(times), statistics.median(times), min(cpu), xla_mib, rss, peer_s, peer_cpu,
                     peer_s / ours_per_seed, ours_err, peer_err, n_peer))  # fmt: skip
        print(f"{name}: compile {compile_s:.1f} s, run {min(times):.3f} s (CPU {min(cpu):.3f} s, median "
              f"{statistics.median(times):.3f} s), XLA memory {xla_mib:.0f} MiB, peak RSS {rss:.0f} MiB; peer "
              f"{peer_s:.3f} s/seed (CPU {peer_cpu:.3f} s; {n_peer} seeds), ratio {peer_s / ours_per_seed:,.0f}; "
              f"final test error ours {ours_err:.3f} %, peer {peer_err:.3f} %", flush=True)  # fmt: skip
    print()
    print(f"| searcher (W = {w}) | compile (s) | {s_count} seeds, one call (s) | CPU (s) | XLA memory (MiB) | "
          "peak RSS (MiB) | Syne Tune peer, per seed (s) | peer / ours, per seed | final test error ours / peer "
          "(%) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for name, c, best, med, cp, xm, rss, ps, pc, ratio, oe, pe, n in rows:
        print(f"| {name} | {c:.1f} | {best:.2f} (median {med:.2f}) | {cp:.2f} | {xm:.0f} | {rss:.0f} | {ps:.2f} "
              f"(CPU {pc:.2f}; {n} seeds) | {ratio:,.0f} | {oe:.2f} / {pe:.2f} |")  # fmt: skip


if __name__ == "__main__":
    app.run(main)
