"""Each searcher compiles one program per distinct chunk shape, also with its seeds split over devices
(the state ``init`` returns is placed like the state a chunk returns, so the second chunk hits the cache)."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_SCRIPT = """
import collections, json, logging, sys, jax
from nas.engine.devices import use_cpu_cores
assert use_cpu_cores(2) == 2
from nas.engine.chunked_loop import run_chunked
from nas.searchers import make_searcher
from spaces.benchmarks.registry import make_benchmark

compiles = collections.Counter()
handler = logging.Handler()
handler.emit = lambda r: compiles.update([r.getMessage().split()[1]] if r.getMessage().startswith("Compiling") else [])
logging.getLogger("jax._src.interpreters.pxla").addHandler(handler)
bench = make_benchmark("nb201/cifar10")
keys = jax.random.split(jax.random.PRNGKey(0), 4)
out = {}
for name in ("random_search", "regularized_evolution"):
    s = make_searcher(name, bench.space, max_queries=12, **({"population_size": 4, "tournament_size": 2}
                                                          if name == "regularized_evolution" else {}))
    compiles.clear()
    with jax.log_compiles(True):
        h = run_chunked(s, bench, keys, chunk_steps=3, progress=False)  # 4 chunks of 3 steps
        jax.block_until_ready(h.score)
    assert len(h.score.sharding.device_set) == 2, h.score.sharding
    out[name] = dict(compiles)
print(json.dumps(out))
"""


@pytest.mark.slow
def test_chunks_compile_once_with_seeds_split_over_two_devices():
    r = subprocess.run([sys.executable, "-c", _SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    counts = json.loads(r.stdout.strip().splitlines()[-1])
    for name, c in counts.items():
        assert c.get("jit(one)") == 1, (name, c)  # the chunk program (chunked_loop.chunk_program), once for 4 chunks
        assert c.get("jit(<lambda>)") == 1, (name, c)  # init_program
        # besides: jax's small `_multi_slice` helper that reads sharded arrays back to the host


def test_chunks_update_the_state_in_place_and_release_compiler_memory(monkeypatch):
    """The chunk program takes the run state donated (one copy in memory, not two), and every backend
    compilation is followed by a release of the compiler's freed heap (``nas.engine.compiler_memory``)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from nas.engine import compiler_memory
    from nas.engine.chunked_loop import chunk_program, init_program
    from nas.searchers import make_searcher
    from spaces.benchmarks.registry import make_benchmark

    assert isinstance(compiler_memory.release_freed_memory(), bool)  # the real call (glibc) or a no-op
    released = []
    monkeypatch.setattr(compiler_memory, "release_freed_memory", lambda: released.append(1) or True)
    bench = make_benchmark("nb201/cifar10")
    s = make_searcher("random_search", bench.space, max_queries=12)
    keys = jax.random.split(jax.random.PRNGKey(0), 3)
    state = init_program(s)(keys)
    new, _ = chunk_program(s, 2)(keys, state, bench)
    assert state.step.is_deleted() and not new.step.is_deleted()
    assert int(new.step[0]) == 2
    # a program no cache holds (a random constant in it): one backend compilation, then a release
    released.clear()
    c = float(np.random.default_rng().uniform(1, 2))
    jax.block_until_ready(jax.jit(lambda x: x * c + 1.0)(jnp.arange(3.0)))
    if compiler_memory._malloc_trim() is not None:
        assert released, "no release after compiling"


def test_one_line_per_new_compiled_program(capsys, monkeypatch):
    """With progress on, a run says when it compiles (once per searcher: its programs are compiled together
    before the first chunk), how long that took and what the compilation cache did; programs compiled
    earlier print nothing."""
    import re

    import jax

    from nas.engine import compile_notice
    from nas.engine.chunked_loop import run_chunked
    from nas.searchers import make_searcher
    from spaces.benchmarks.registry import make_benchmark

    bench = make_benchmark("nb201/cifar10")
    s = make_searcher("random_search", bench.space, max_queries=8, pool=5)  # options no other test uses
    keys = jax.random.split(jax.random.PRNGKey(0), 2)

    def notices():
        return [x for x in capsys.readouterr().err.replace("\r", "\n").splitlines() if "compiling" in x]

    run_chunked(s, bench, keys, chunk_steps=4, progress=True)
    lines = notices()
    assert len(lines) == 1 and re.fullmatch(r"compiling random_search \.\.\. \d+\.\d s \(.+\)", lines[0]), lines
    run_chunked(s, bench, keys, chunk_steps=4, progress=True)
    assert notices() == []  # the same programs: nothing to say
    run_chunked(s, bench, keys, chunk_steps=3, progress=True, label="rs")  # chunks 0-3, 3-6, 6-8: two new
    lines = notices()
    assert [x.split(" ... ")[0] for x in lines] == ["compiling rs"], lines  # both, before the first chunk
    monkeypatch.setattr(compile_notice, "_cache_dir", lambda: "/c")
    kept = "1 program kept in the compilation cache /c"
    assert compile_notice.describe(1.23, compiles=3, slow=1, hits=2) == (
        f"1.2 s (2 programs from the compilation cache; {kept}; 2 too quick to cache)"
    )
    assert compile_notice.describe(0.5, compiles=0, slow=0, hits=1) == "0.5 s (1 program from the compilation cache)"
    monkeypatch.setattr(compile_notice, "_cache_dir", lambda: "")
    assert compile_notice.describe(2.0, 1, 1, 0) == "2.0 s (no compilation cache: --compilation_cache is off)"


def test_a_terminal_sees_the_seconds_count_while_a_compile_runs(monkeypatch):
    """On a terminal the ``compiling`` line counts seconds until the block ends, then the final figure takes
    the count's place on the same line; a log (not a terminal) gets the plain line."""
    import io
    import time

    from nas.engine import compile_notice

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(compile_notice, "TICK_S", 0.05)
    for stream in (Terminal(), io.StringIO()):
        with compile_notice.compile_notice("slow_searcher", stream=stream):
            time.sleep(0.5)
        text = stream.getvalue()
        assert text.endswith(" s (compiled earlier in this process)\n") and text.count("\n") == 1, repr(text)
        head = "compiling slow_searcher ... "
        if isinstance(stream, Terminal):  # the count, redrawn over itself with backspaces, then the figure
            assert text.startswith(f"{head}0 s\b\b\b0 s"), repr(text)  # at least two counts (0.5 s / 0.05 s)
            shown = []  # the line as the terminal shows it
            for ch in text:
                if ch == "\b":
                    shown.pop()
                else:
                    shown.append(ch)
            text = "".join(shown)
        assert "\b" not in text and text.startswith(f"{head}0.") and "\r" not in text, repr(text)


def test_programs_compile_together_in_threads_and_run_without_compiling_again(monkeypatch):
    """``compile_ahead`` lowers programs in the calling thread and compiles them in a pool of threads
    (``nas.engine.program_cache``); the calls that follow neither trace nor compile. A run's programs are
    compiled from abstract arguments (``run_programs``: the chunk's state is the init program's output
    shape), before anything runs."""
    import threading

    import jax

    from nas.engine import compile_notice, program_cache
    from nas.engine.chunked_loop import chunk_bounds, run_chunked, run_programs
    from nas.engine.devices import cpu_cores, shard_keys
    from nas.searchers import make_searcher
    from spaces.benchmarks.registry import make_benchmark

    assert program_cache.compile_threads(1) == 1
    if jax.default_backend() == "cpu":
        assert program_cache.default_threads() == min(cpu_cores(), program_cache.MAX_THREADS)
    else:  # side by side compiles were not measured on accelerators
        assert program_cache.default_threads() == 1
    monkeypatch.setenv(program_cache.THREADS_ENV, "3")
    assert program_cache.compile_threads(8) == 3 and program_cache.compile_threads(2) == 2
    for bad in ("0", "two"):
        monkeypatch.setenv(program_cache.THREADS_ENV, bad)
        with pytest.raises(ValueError, match=program_cache.THREADS_ENV):
            program_cache.compile_threads(2)
    monkeypatch.setenv(program_cache.THREADS_ENV, "2")
    threads = set()
    compile_ = jax.stages.Lowered.compile
    monkeypatch.setattr(
        jax.stages.Lowered,
        "compile",
        lambda self, *a, **k: threads.add(threading.current_thread().name) or compile_(self, *a, **k),
    )
    bench = make_benchmark("nb201/cifar10")
    s = make_searcher("regularized_evolution", bench.space, max_queries=10, population_size=5, tournament_size=3)
    keys = shard_keys(s, jax.random.split(jax.random.PRNGKey(1), 2))  # placed as run_chunked places them
    programs = run_programs(s, bench, keys, chunk_bounds(s, 4))  # init, chunks of 4 steps and of 2
    assert len(programs) == 3
    assert isinstance(jax.tree.leaves(programs[1][1][1])[0], jax.ShapeDtypeStruct)  # nothing ran
    program_cache.compile_ahead(programs, "re", notice=False)
    assert threads and all(name.startswith("nasjax-compile") for name in threads), threads
    compile_notice._listen()
    before = compile_notice._totals["compiles"]
    h = run_chunked(s, bench, keys, chunk_steps=4, progress=False)
    jax.block_until_ready(h.score)
    assert compile_notice._totals["compiles"] == before, "a program compiled ahead compiled again"
