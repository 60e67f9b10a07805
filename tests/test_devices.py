"""Seeds split over CPU devices (nas/engine/devices.py) give the same numbers as one device."""

import os
import subprocess
import sys

import numpy as np
import pytest

from nas.engine.devices import seed_mesh_size

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# runs in a fresh process: the device count is fixed when JAX's backend starts
_SCRIPT = """
import sys, jax, numpy as np
from nas.engine.devices import use_cpu_cores
assert use_cpu_cores(int(sys.argv[1])) == int(sys.argv[1])
from nas.engine.chunked_loop import run_chunked
from nas.searchers import make_searcher
from spaces.benchmarks.registry import make_benchmark
bench = make_benchmark("nb201/cifar10")
keys = jax.random.split(jax.random.PRNGKey(3), 4)
# the BO searchers' bucketed programs on two devices: test_gp_searcher_on_two_devices_equals_one_device
rs = make_searcher("random_search", bench.space, max_queries=20)
h_re = run_chunked(rs, bench, keys, chunk_steps=rs.num_steps, progress=False)
assert len(h_re.score.sharding.device_set) == min(int(sys.argv[1]), 4), h_re.score.sharding
np.savez(sys.argv[2], re=np.asarray(h_re.tokens), re_v=np.asarray(h_re.score))
"""


def test_seed_mesh_size_divides_the_seeds():
    devs = list(range(4))
    assert seed_mesh_size(100, devs) == 4
    assert seed_mesh_size(6, devs) == 3
    assert seed_mesh_size(7, devs) == 1
    assert seed_mesh_size(1, devs) == 1


# a GP searcher (Cholesky in surrogates.linalg, no LAPACK call) split over the devices
_GP_SCRIPT = """
import sys, jax, numpy as np
from nas.engine.devices import use_cpu_cores
assert use_cpu_cores(int(sys.argv[1])) == int(sys.argv[1])
from nas.engine.chunked_loop import run_chunked
from nas.searchers import make_searcher
from spaces.benchmarks.registry import make_benchmark
bench = make_benchmark("nb201/cifar10")
keys = jax.random.split(jax.random.PRNGKey(5), 4)
gp = make_searcher("gp_bo", bench.space, max_queries=20, gp_steps=5, num_candidates=10, bucket_multiple=16)
h = run_chunked(gp, bench, keys, progress=False)
assert len(h.score.sharding.device_set) == min(int(sys.argv[1]), 4), h.score.sharding
np.savez(sys.argv[2], gp=np.asarray(h.tokens), gp_v=np.asarray(h.score))
"""


def _run_on(script, tmp_path, counts):
    env = dict(os.environ, PYTHONPATH=ROOT, JAX_PLATFORMS="cpu")  # CPU devices, also on an accelerator host
    # the scripts set the device count themselves; the suite's optimization level stays
    env["XLA_FLAGS"] = " ".join(f for f in env.get("XLA_FLAGS", "").split() if "device_count" not in f)
    out = {}
    for n in counts:
        path = str(tmp_path / f"h{n}.npz")
        r = subprocess.run([sys.executable, "-c", script, str(n), path], env=env, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[-3000:]
        out[n] = np.load(path)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("devices", [2])
def test_sharded_seeds_equal_one_device(tmp_path, devices):
    out = _run_on(_SCRIPT, tmp_path, (1, devices))
    for k in out[1].files:
        np.testing.assert_array_equal(out[1][k], out[devices][k], err_msg=k)


@pytest.mark.slow
def test_gp_searcher_on_two_devices_equals_one_device(tmp_path):
    out = _run_on(_GP_SCRIPT, tmp_path, (1, 2))
    for k in out[1].files:
        np.testing.assert_array_equal(out[1][k], out[2][k], err_msg=k)
    assert len(np.unique(out[1]["gp"][:, 10:], axis=1)) > 1  # the model-chosen queries differ per seed


@pytest.mark.slow
def test_train_on_8_forced_cpu_devices_equals_1_device(tmp_path):
    """``scripts.train`` with the seeds on a mesh of 8 (fake) CPU devices gives the 1-device history bit for bit."""
    small = ["--config.num_trials=8", "--config.max_queries=12", "--config.only=random_search", "--noprogress"]
    small.append("--verbosity=0")  # the INFO line that says how the seeds split (quiet by default)
    runs, logs = {}, {}
    for n in (1, 8):
        env = dict(os.environ, PYTHONPATH=ROOT, JAX_PLATFORMS="cpu")  # CPU devices, also on an accelerator host
        flags = [f for f in env.pop("XLA_FLAGS", "").split() if "device_count" not in f]  # keep the suite's -O0
        env["XLA_FLAGS"] = " ".join(flags)
        args = ["--cpu_devices=1"]
        if n == 8:  # the device count comes from XLA_FLAGS alone (the train command's default --cpu_devices=0)
            env["XLA_FLAGS"] = " ".join([*flags, "--xla_force_host_platform_device_count=8"])
            args = []
        wd = tmp_path / f"d{n}"
        cmd = [sys.executable, "-m", "scripts.train", "--config", "configs/default.py", "--workdir", str(wd)]
        r = subprocess.run([*cmd, *small, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]
        runs[n], logs[n] = np.load(wd / "history" / "random_search.npz"), r.stderr
    assert "8 seeds split over 8 devices" in logs[8], logs[8][-2000:]
    assert "split over" not in logs[1]
    assert runs[1]["tokens"].shape == (8, 12, 6)
    for k in runs[1].files:
        if k != "entry":
            np.testing.assert_array_equal(runs[1][k], runs[8][k], err_msg=k)


@pytest.mark.slow
def test_train_over_two_processes_resumes_and_equals_one_process(tmp_path):
    """``scripts.train --distributed`` over 2 processes x 2 CPU devices resumes a run interrupted in a
    single process (process 0 reads the checkpoint and broadcasts it) and writes the history of an
    uninterrupted single-process run bit for bit; only process 0 writes and prints."""
    import socket

    import jax

    from configs import default
    from nas.experiment.run import run_experiment

    if jax.default_backend() != "cpu":
        pytest.skip("compares a run in this process with CPU processes: needs JAX on the CPU here too")
    small = {"num_trials": 8, "max_queries": 12, "only": "random_search", "chunk_steps": 4}
    config = default.get_config()
    config.update(small)
    resumed = tmp_path / "resumed"
    assert run_experiment(config, str(resumed), progress=False, max_chunks=1) is None  # 1 of 3 chunks done
    assert (resumed / "ckpt" / "random_search.npz").exists()

    with socket.socket() as s:
        s.bind(("localhost", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, PYTHONPATH=ROOT, JAX_PLATFORMS="cpu")
    env["XLA_FLAGS"] = " ".join(f for f in env.get("XLA_FLAGS", "").split() if "device_count" not in f)
    args = ["--config", "configs/default.py", *(f"--config.{k}={v}" for k, v in small.items()), "--noprogress"]
    args.append("--verbosity=0")  # the INFO line that says how the seeds split (quiet by default)

    def start(workdir, process=None):
        cmd = [sys.executable, "-m", "scripts.train", "--workdir", str(workdir), *args]
        extra = {}
        if process is not None:
            cmd += ["--distributed", "--cpu_devices=2"]
            extra = {"JAX_COORDINATOR_ADDRESS": f"localhost:{port}", "JAX_NUM_PROCESSES": "2"}
            extra["JAX_PROCESS_ID"] = str(process)
        else:
            cmd += ["--cpu_devices=1"]
        return subprocess.Popen(
            cmd, cwd=ROOT, env={**env, **extra}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )

    procs = [start(resumed, p) for p in range(2)] + [start(tmp_path / "one")]
    outs = []
    try:
        for p in procs:
            out, _ = p.communicate(timeout=300)
            assert p.returncode == 0, out[-3000:]
            outs.append(out)
    finally:  # a failed process leaves its peer waiting in a collective
        for p in procs:
            p.kill()
    assert "8 seeds split over 4 devices" in outs[0], outs[0][-2000:]
    assert "outputs in" in outs[0] and "outputs in" not in outs[1]
    one, got = (np.load(wd / "history" / "random_search.npz") for wd in (tmp_path / "one", resumed))
    for k in one.files:
        np.testing.assert_array_equal(one[k], got[k], err_msg=k)
    assert not (resumed / "ckpt" / "random_search.npz").exists()


DISPATCH = """
import sys, jax, nas
if sys.argv[1] == "started":
    jax.numpy.ones(1).block_until_ready()  # the caller's own JAX first: its backend is up, asynchronous
study = nas.Study({"x": [1, 2, 3]}, searcher="random_search", direction="minimize", max_trials=2)
study.tell(study.ask(), 1.0)
print("async", jax.config.read("jax_cpu_enable_async_dispatch"))
"""


@pytest.mark.parametrize("case, expected", [("first", "False"), ("chosen", "True"), ("started", "True")])
def test_a_study_that_starts_jax_runs_its_cpu_programs_inline(case, expected):
    """The first JAX user in the process, a Study turns JAX's CPU async dispatch off (its one-step programs
    then run in the calling thread); ``$JAX_CPU_ENABLE_ASYNC_DISPATCH`` or a backend already started is left."""
    env = {k: v for k, v in os.environ.items() if k != "JAX_CPU_ENABLE_ASYNC_DISPATCH"}
    env.update(PYTHONPATH=ROOT, JAX_PLATFORMS="cpu")
    if case == "chosen":
        env["JAX_CPU_ENABLE_ASYNC_DISPATCH"] = "true"
    r = subprocess.run([sys.executable, "-c", DISPATCH, case], env=env, capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    assert f"async {expected}" in r.stdout, r.stdout
