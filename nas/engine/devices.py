"""Seeds across devices: every CPU core a JAX device, the seed axis sharded over them.

XLA runs one CPU program mostly on one core: a vmapped search over 100 seeds kept the 2-core
machine at a load of ~1.3. Seeds are independent, so the leading (seed) axis of the keys and
of the search state can be split over devices and ``jax.jit`` partitions the vmapped program
along it (computation follows the data's sharding; nothing crosses devices inside a step).
On the CPU this needs one JAX device per core: ``use_cpu_cores()`` asks for them before the
backend starts (``jax_num_cpu_devices``). On a GPU or TPU host the same code shards over the
accelerators (one GPU: no sharding, nothing changes).

Each seed runs the same per-seed program (``tests/test_devices.py`` runs 1 and 2 devices and
compares the histories bit for bit, and runs ``scripts.train`` on 8 forced CPU devices against 1).
XLA runs a program for several devices through its partitioning passes before simplifying it, and
the simplifier then rewrites some float expressions differently (Adam's bias-corrected step), so
searchers that train networks or fit GPs can differ from a one-device run by float rounding; runs
on 2, 4, ... devices agree (docs/reference/scaling.md, "One device against several").

The seed axis is a named mesh axis: ``seed_mesh`` is a 1-D ``jax.sharding.Mesh`` with axis
``"seeds"`` over the devices, ``seed_sharding`` its ``NamedSharding``. One code path runs on one
CPU, on the cores of a CPU host, on the GPUs of one host, and across hosts:
``initialize_distributed()`` (opt-in, before any JAX computation) wraps
``jax.distributed.initialize``; after it ``jax.devices()`` lists every process's devices, the mesh
spans them, ``shard_seeds`` builds the global arrays from each process's (identical) host copy,
and ``gather_seeds`` brings a sharded result back to every process. See docs/reference/scaling.md.

Programs with a Cholesky factorization (the GP of ``gp_bo`` and ``bananas(predictor="gp")``) split
too: ``surrogates.linalg`` factors in plain JAX. jaxlib's batched CPU LAPACK kernel, which
``jnp.linalg.cholesky`` calls under ``vmap``, deadlocked in ``ParallelBatchMap`` when the seeds
were split over 2 CPU devices (and sometimes on one), see ``docs/dev/engine.md``.
"""

from __future__ import annotations

import logging
import os
import re

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec


def cpu_cores() -> int:
    """Cores this process may run on (the affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def forced_cpu_devices() -> int:
    """The CPU device count that ``XLA_FLAGS=--xla_force_host_platform_device_count=N`` asks for (0 = none)."""
    found = re.findall(r"--xla_force_host_platform_device_count=(\d+)", os.environ.get("XLA_FLAGS", ""))
    return int(found[-1]) if found else 0


def use_cpu_cores(num: int = 0) -> int:
    """Makes the CPU backend expose ``num`` devices (0 = one per core, or the count that
    ``XLA_FLAGS=--xla_force_host_platform_device_count=N`` forces); call before any JAX
    computation. Returns the number asked for, or 0 when the backend had already started (then
    nothing changes and a warning says so)."""
    if not num and forced_cpu_devices():
        return forced_cpu_devices()  # the user's XLA_FLAGS decide; jax_num_cpu_devices would override them
    num = int(num) or cpu_cores()
    if num < 1:
        raise ValueError(f"use_cpu_cores: num must be >= 1 (or 0 = one per core), got {num}")
    try:
        jax.config.update("jax_num_cpu_devices", num)
    except RuntimeError as e:  # the backend is already initialized
        logging.warning("use_cpu_cores(%d) ignored: %s", num, e)
        return 0
    return num


def seed_mesh_size(num_seeds: int, devices=None) -> int:
    """The number of devices the seed axis is split over: the most devices ``d`` (of the default
    backend's) such that ``num_seeds % d == 0`` (equal shards; 1 = no sharding)."""
    n = len(devices if devices is not None else jax.devices())
    return max(d for d in range(1, n + 1) if num_seeds % d == 0)


SEED_AXIS = "seeds"


def seed_mesh(num_seeds: int, devices=None) -> Mesh:
    """The 1-D mesh (axis ``"seeds"``) that ``num_seeds`` seeds are split over: the first
    ``seed_mesh_size`` of ``devices`` (default ``jax.devices()``: every process's devices after
    ``initialize_distributed``). Across processes the seeds must split over all devices, or some
    process would hold no seed."""
    devices = list(jax.devices() if devices is None else devices)
    d = seed_mesh_size(num_seeds, devices)
    processes = {dev.process_index for dev in devices}
    if len(processes) > 1 and d != len(devices):
        raise ValueError(
            f"{num_seeds} seeds do not split evenly over the {len(devices)} devices of {len(processes)} processes; "
            f"use a multiple of {len(devices)} seeds"
        )
    return Mesh(np.asarray(devices[:d]), (SEED_AXIS,))


def seed_sharding(num_seeds: int) -> NamedSharding | None:
    """Sharding of arrays whose leading axis is the seed axis, or None for a single device."""
    mesh = seed_mesh(num_seeds)
    if mesh.size == 1:
        return None
    return NamedSharding(mesh, PartitionSpec(SEED_AXIS))


def _put(leaf, sharding: NamedSharding):
    """``leaf`` placed with ``sharding``; across processes each process gives its shards from its own
    copy (every process computes the same keys from the same seed)."""
    if sharding.is_fully_addressable:
        return jax.device_put(leaf, sharding)
    host = np.asarray(leaf)
    return jax.make_array_from_callback(host.shape, sharding, lambda index: host[index])


def shard_seeds(tree, num_seeds: int):
    """``tree`` (leaves with leading axis ``num_seeds``) placed split over the devices; unchanged
    where there is a single device or the seeds do not split evenly."""
    sharding = seed_sharding(num_seeds)
    if sharding is None:
        return tree
    for leaf in jax.tree.leaves(tree):
        if np.ndim(leaf) == 0 or np.shape(leaf)[0] != num_seeds:
            raise ValueError(f"shard_seeds: every leaf needs the seed axis ({num_seeds}) first, got {np.shape(leaf)}")
    logging.info("%d seeds split over %d devices (mesh axis %r)", num_seeds, sharding.mesh.size, SEED_AXIS)
    return jax.tree.map(lambda leaf: _put(leaf, sharding), tree)


def gather_seeds(tree):
    """Host (numpy) copies of ``tree``'s leaves, whole on every process: a result sharded over the
    devices of several processes is all-gathered (``multihost_utils.process_allgather``)."""
    leaves = jax.tree.leaves(tree)
    if all(getattr(x, "is_fully_addressable", True) for x in leaves):
        return jax.tree.map(np.asarray, tree)
    from jax.experimental import multihost_utils

    return jax.tree.map(np.asarray, multihost_utils.process_allgather(tree, tiled=True))


def is_lead() -> bool:
    """Whether this process writes the outputs of a run: process 0 (the only one on a single host)."""
    return jax.process_index() == 0


def from_lead(tree):
    """``tree`` (host values) as process 0 has it, on every process; unchanged on a single process.

    Host-side decisions of a multi-process run (a finished searcher, a loaded checkpoint) are made by
    process 0 alone, which owns the workdir, and broadcast, so the processes never disagree about
    which compiled programs run next.
    """
    if jax.process_count() == 1:
        return tree
    from jax.experimental import multihost_utils

    return jax.tree.map(np.asarray, multihost_utils.broadcast_one_to_all(tree))


def first_value(x) -> np.ndarray:
    """The host value of a per-seed array's first local row (for values every seed shares, like the
    step counter), read without a collective."""
    shards = getattr(x, "addressable_shards", None)
    return np.asarray(shards[0].data if shards else x).reshape(-1)[0]


def shard_keys(searcher, keys):
    """The seed keys of a run of ``searcher``, split over the devices unless the searcher says it
    must stay on one (``splits_over_devices = False``; every registered searcher splits). The
    state that ``jit`` computes from the keys follows their placement."""
    if not searcher.splits_over_devices:
        return keys
    return shard_seeds(keys, keys.shape[0])


def shard_like(keys, tree):
    """``tree`` (leaves with the seed axis first) placed like ``keys``: split over the same devices.

    The state that ``init`` returns must be placed like the state a chunk returns,
    or the second chunk sees new input shardings and compiles again. Host (numpy) leaves, a loaded
    checkpoint, become global arrays built from each process's identical copy.
    """
    sharding = getattr(keys, "sharding", None)
    if not isinstance(sharding, NamedSharding):
        return tree
    return jax.tree.map(lambda x: jax.device_put(x, sharding) if isinstance(x, jax.Array) else _put(x, sharding), tree)


def initialize_distributed(
    coordinator_address: str | None = None,
    num_processes: int | None = None,
    process_id: int | None = None,
    local_device_ids=None,
    **kwargs,
) -> tuple[int, int]:
    """Joins a multi-process JAX run (``jax.distributed.initialize``); call it in every process
    before any JAX computation. Returns ``(process_index, process_count)``.

    With no arguments JAX detects the cluster (Cloud TPU pods, SLURM, Open MPI) or reads
    ``JAX_COORDINATOR_ADDRESS``; ``num_processes`` and ``process_id`` default to the environment
    variables ``JAX_NUM_PROCESSES`` and ``JAX_PROCESS_ID`` where set. ``kwargs`` go to
    ``jax.distributed.initialize``. Calling it again in the same process does nothing.
    """
    if jax.distributed.is_initialized():
        return jax.process_index(), jax.process_count()
    env_int = {k: int(os.environ[k]) for k in ("JAX_NUM_PROCESSES", "JAX_PROCESS_ID") if os.environ.get(k)}
    num_processes = env_int.get("JAX_NUM_PROCESSES") if num_processes is None else num_processes
    process_id = env_int.get("JAX_PROCESS_ID") if process_id is None else process_id
    jax.distributed.initialize(
        coordinator_address=coordinator_address,
        num_processes=num_processes,
        process_id=process_id,
        local_device_ids=local_device_ids,
        **kwargs,
    )
    logging.info(
        "process %d of %d: %d local devices", jax.process_index(), jax.process_count(), jax.local_device_count()
    )
    return jax.process_index(), jax.process_count()


# the library's persistent compilation cache unless told otherwise (``scripts.train``'s default too)
DEFAULT_COMPILATION_CACHE = os.path.join(os.path.expanduser("~"), ".cache", "nasjax", "jax")
# set to '' to keep a host Study from turning the cache on (default_compilation_cache)
CACHE_ENV = "NASJAX_COMPILATION_CACHE"


def default_compilation_cache() -> str:
    """Turns JAX's persistent compilation cache on where nothing configured it: the folder of
    ``$NASJAX_COMPILATION_CACHE`` (``''``: off), else ``~/.cache/nasjax/jax``. A cache the caller configured
    (``jax_compilation_cache_dir``, ``$JAX_COMPILATION_CACHE_DIR``, ``jax_enable_compilation_cache`` off) is
    left as it is, and a folder that cannot be created leaves the cache off. Returns the cache folder in use
    ('' when off).

    A host ``Study`` calls it before compiling, so a second process with the same searcher and space shape
    reads its programs from disk instead of compiling them (XLA executables keyed by program, options,
    device and jax version: a cached program computes what a fresh compile does). Every program is kept
    (no compile-time threshold), so a warm second process compiles nothing."""
    if not jax.config.jax_enable_compilation_cache:  # turned off by the caller
        return ""
    if jax.config.jax_compilation_cache_dir:  # configured by the caller
        return jax.config.jax_compilation_cache_dir
    path = os.path.expanduser(os.environ.get(CACHE_ENV, DEFAULT_COMPILATION_CACHE))
    if not path:
        return ""
    try:  # every program kept: a Study's are 0.01-0.3 s each, below the 0.05 s default, and a second process
        enable_compilation_cache(path, min_compile_secs=0.0)  # would compile them all again (a few KB each)
    except OSError as e:  # a read-only home: compile every time, as without the cache
        logging.warning("compilation cache %s not used: %s", path, e)
        return ""
    # JAX decides once per process whether the cache is used (at its first compile); ask it again
    from jax.experimental.compilation_cache import compilation_cache

    compilation_cache.reset_cache()
    return path


def enable_compilation_cache(path: str, min_compile_secs: float = 0.05) -> None:
    """Turns on JAX's persistent compilation cache in ``path`` ('' = leave it off): a rerun of the same
    programs skips most XLA compiles. Programs that compile faster than ``min_compile_secs`` are not cached
    (0.05 s: a rerun of the default job also skips its helper programs of 0.01-0.5 s each, about 0.5 s of
    CPU time, for under 100 KB more on disk)."""
    if not path:
        return
    path = os.path.expanduser(path)
    os.makedirs(path, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", path)
    min_secs = os.environ.get("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", min_compile_secs)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", float(min_secs))


# set (to true or false) to choose JAX's CPU dispatch yourself: a Study then leaves it (inline_cpu_dispatch)
ASYNC_DISPATCH, ASYNC_DISPATCH_ENV = "jax_cpu_enable_async_dispatch", "JAX_CPU_ENABLE_ASYNC_DISPATCH"


def _backend_started() -> bool:
    try:
        from jax._src import xla_bridge  # JAX has no public name for it

        return xla_bridge.backends_are_initialized()
    except (ImportError, AttributeError):  # another JAX: take it as started and change nothing
        return True


def inline_cpu_dispatch() -> bool:
    """Has JAX's CPU backend run each program in the thread that calls it (``jax_cpu_enable_async_dispatch``
    off) when the backend has not started yet and ``$JAX_CPU_ENABLE_ASYNC_DISPATCH`` is unset (the caller's
    choice wins); returns whether it did. A host ``Study`` calls it first.

    With asynchronous dispatch, XLA hands a program that is not tiny (its cost estimate over 1,000 flops) to
    a thread of its client and the caller waits for the result: a Study runs two such programs per trial and
    reads each result at once, and each hand-off waited for the other thread to wake (50-150 us on a 2-vCPU
    VM, more than the program ran). Inline, a warm evolution ``ask``+``tell`` took half the time
    (``scripts/bench/bench_tuner.py``). Only the CPU backend reads the setting; GPU and TPU programs are
    asynchronous either way. A training in the same process runs its CPU programs inline too: an MLP's
    steps took the same time either way here (the step waits for its inputs in both)."""
    try:
        asynchronous = jax.config.read(ASYNC_DISPATCH)
    except (AttributeError, KeyError):  # a JAX without the setting
        return False
    if ASYNC_DISPATCH_ENV in os.environ or not asynchronous or _backend_started():
        return False
    jax.config.update(ASYNC_DISPATCH, False)
    return True
