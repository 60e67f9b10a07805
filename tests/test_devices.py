"""Seeds split over CPU devices (nas/devices.py) give the same numbers as one device."""

import os
import subprocess
import sys

import numpy as np
import pytest

from nas.devices import seed_mesh_size

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# runs in a fresh process: the device count is fixed when JAX's backend starts
_SCRIPT = """
import sys, jax, numpy as np
from nas.devices import use_cpu_cores
assert use_cpu_cores(int(sys.argv[1])) == int(sys.argv[1])
from nas.host_loop import run_chunked
from nas.searcher import make_searcher
from spaces.benchmarks.registry import make_benchmark
bench = make_benchmark("nb201/cifar10")
keys = jax.random.split(jax.random.PRNGKey(3), 4)
bo = make_searcher("bananas", bench.space, max_queries=20, epochs=2, num_members=2, num_layers=2, num_candidates=10)
h_bo = run_chunked(bo, bench, keys, chunk_steps=bo.num_steps, progress=False)
rs = make_searcher("random_search", bench.space, max_queries=20)
h_re = run_chunked(rs, bench, keys, chunk_steps=rs.num_steps, progress=False)
assert len(h_bo.score.sharding.device_set) == min(int(sys.argv[1]), 4), h_bo.score.sharding
np.savez(sys.argv[2], bo=np.asarray(h_bo.tokens), bo_v=np.asarray(h_bo.score), re=np.asarray(h_re.tokens))
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
from nas.devices import use_cpu_cores
assert use_cpu_cores(int(sys.argv[1])) == int(sys.argv[1])
from nas.host_loop import run_chunked
from nas.searcher import make_searcher
from spaces.benchmarks.registry import make_benchmark
bench = make_benchmark("nb201/cifar10")
keys = jax.random.split(jax.random.PRNGKey(5), 4)
gp = make_searcher("gp_bo", bench.space, max_queries=20, gp_steps=5, num_candidates=10, bucket_multiple=16)
h = run_chunked(gp, bench, keys, progress=False)
assert len(h.score.sharding.device_set) == min(int(sys.argv[1]), 4), h.score.sharding
np.savez(sys.argv[2], gp=np.asarray(h.tokens), gp_v=np.asarray(h.score))
"""


def _run_on(script, tmp_path, counts):
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = {}
    for n in counts:
        path = str(tmp_path / f"h{n}.npz")
        r = subprocess.run([sys.executable, "-c", script, str(n), path], env=env, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[-3000:]
        out[n] = np.load(path)
    return out


@pytest.mark.parametrize("devices", [2])
def test_sharded_seeds_equal_one_device(tmp_path, devices):
    out = _run_on(_SCRIPT, tmp_path, (1, devices))
    for k in out[1].files:
        np.testing.assert_array_equal(out[1][k], out[devices][k], err_msg=k)


def test_gp_searcher_on_two_devices_equals_one_device(tmp_path):
    out = _run_on(_GP_SCRIPT, tmp_path, (1, 2))
    for k in out[1].files:
        np.testing.assert_array_equal(out[1][k], out[2][k], err_msg=k)
    assert len(np.unique(out[1]["gp"][:, 10:], axis=1)) > 1  # the model-chosen queries differ per seed
