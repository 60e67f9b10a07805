"""The compile budget's tools: the persistent compilation cache a Study turns on, and the compile bench."""

import json
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import pytest

from nas.engine import devices

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def no_cache_configured(monkeypatch):
    """No compilation cache configured in this process for the test; the process's own restored after it."""
    from jax.experimental.compilation_cache import compilation_cache

    old_dir = jax.config.jax_compilation_cache_dir
    old_min = jax.config.jax_persistent_cache_min_compile_time_secs
    jax.config.update("jax_compilation_cache_dir", None)
    compilation_cache.reset_cache()
    monkeypatch.setenv("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")  # keep even the quickest program
    yield
    jax.config.update("jax_compilation_cache_dir", old_dir)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", old_min)
    compilation_cache.reset_cache()


def test_default_cache_is_turned_on_where_none_is_configured(no_cache_configured, monkeypatch, tmp_path):
    monkeypatch.setenv(devices.CACHE_ENV, str(tmp_path / "cache"))
    jnp.sin(jnp.float32(1.0)).block_until_ready()  # JAX has checked its cache (off) before: asked again
    assert devices.default_compilation_cache() == str(tmp_path / "cache")
    jax.jit(lambda x: x * 3.0 + 1.0)(jnp.arange(7.0)).block_until_ready()
    assert os.listdir(tmp_path / "cache"), "the program was not written to the cache"


def test_the_default_cache_keeps_every_program(no_cache_configured, monkeypatch, tmp_path):
    # a Study's programs compile in 0.01-0.3 s: under a threshold a warm second process would compile them again
    monkeypatch.delenv("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS")
    monkeypatch.setenv(devices.CACHE_ENV, str(tmp_path / "cache"))
    assert devices.default_compilation_cache() == str(tmp_path / "cache")
    assert jax.config.jax_persistent_cache_min_compile_time_secs == 0.0


def test_default_cache_leaves_a_configured_cache_and_can_be_turned_off(no_cache_configured, monkeypatch, tmp_path):
    monkeypatch.setenv(devices.CACHE_ENV, "")
    assert devices.default_compilation_cache() == ""
    assert not jax.config.jax_compilation_cache_dir
    jax.config.update("jax_compilation_cache_dir", str(tmp_path / "mine"))
    monkeypatch.setenv(devices.CACHE_ENV, str(tmp_path / "other"))
    assert devices.default_compilation_cache() == str(tmp_path / "mine")
    assert not (tmp_path / "other").exists()
    jax.config.update("jax_enable_compilation_cache", False)
    try:
        assert devices.default_compilation_cache() == ""
    finally:
        jax.config.update("jax_enable_compilation_cache", True)


def test_a_study_turns_the_cache_on(no_cache_configured, monkeypatch, tmp_path):
    from nas.host.study import Study

    monkeypatch.setenv(devices.CACHE_ENV, str(tmp_path / "cache"))
    Study({"a": [1, 2, 3], "b": [4, 5]}, "random_search", max_queries=3).optimize(lambda p: p["a"], n_trials=3)
    assert jax.config.jax_compilation_cache_dir == str(tmp_path / "cache")


@pytest.mark.slow
def test_compile_bench_runs_and_lists_every_program(tmp_path):
    """``scripts.bench.bench_compile`` in a tiny mode: a searcher on NB201 and on a 24-row table, and a
    multi-objective one (it records NB201's latency; the 24-row table has no metric, so it is skipped)."""
    out = tmp_path / "compile.json"
    cmd = [sys.executable, "-m", "scripts.bench.bench_compile", "--searchers=random_search,nsga2", "--seeds=2",
           "--max_queries=6", "--benchmarks=nb201/cifar10,byo24", f"--json={out}"]  # fmt: skip
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    if "benchmark file" in r.stdout + r.stderr and "absent" in r.stdout + r.stderr:
        pytest.skip("NB201 data absent")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    rows = json.loads(out.read_text())["rows"]
    assert [(x["searcher"], x["benchmark"]) for x in rows] == [("random_search", "nb201/cifar10"),
                                                                ("random_search", "byo24"),
                                                                ("nsga2", "nb201/cifar10")]  # fmt: skip
    assert [x["metrics"] for x in rows] == [[], [], ["latency"]]
    assert "nsga2 on byo24: skipped (a multi-objective searcher, a table without metrics)" in r.stdout
    for x in rows:
        assert [p["program"].split()[0] for p in x["programs"]] == ["init", "chunk"]
        assert x["num_programs"] == 2 and x["compile_cpu"] > 0 and x["eqns"] > 0 and len(x["digest"]) == 16
    assert "| random_search | byo24 | 2 |" in r.stdout
