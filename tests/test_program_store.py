"""Study programs kept as exported StableHLO (nas.engine.program_store): a warm process traces no searcher code
and every process computes the same bits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest

import nas
from nas.engine import program_cache, program_store
from nas.engine.program_store import STORE_DIR, StoredProgram, stored_jit

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPACE = {"lr": nas.Float(1e-4, 1e-1, log=True), "width": nas.Int(8, 256), "act": ["relu", "tanh", "gelu"]}


def run_study(searcher: str, n: int = 30) -> list:
    budget = {"max_resource": n * 9, "fidelities": [1, 3, 9]} if searcher == "asha" else {"max_trials": n}
    study = nas.Study(SPACE, searcher=searcher, direction="minimize", seed=5, **budget)
    rows = []
    for _ in range(n):
        t = study.ask()
        rows.append(t.tokens.tolist())
        study.tell(t, (t.params["lr"] - 0.01) ** 2 + abs(t.params["width"] - 64) / 256)
    return rows


def fresh_programs() -> None:
    """As a new process: no program of this one's is reused (the store and XLA's disk cache stay)."""
    program_cache._PROGRAMS.clear()
    program_cache._COMPILED.clear()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A new, empty store for the Study's programs (XLA's cache stays where it is); the process's programs
    are put back afterwards, so the tests after these do not trace theirs again."""
    monkeypatch.setattr(program_store, "store_folder", lambda: str(tmp_path / STORE_DIR))
    programs, compiled = program_cache._PROGRAMS.copy(), set(program_cache._COMPILED)
    fresh_programs()
    yield tmp_path
    fresh_programs()
    program_cache._PROGRAMS.update(programs)
    program_cache._COMPILED.update(compiled)


def stored_asks(what: str = "study_ask") -> list[StoredProgram]:
    return [p for (_, name, _), p in program_cache._PROGRAMS.items() if name == what]


@pytest.mark.filterwarnings("ignore:searcher .* searches 2 ranges on a grid")
def test_a_stored_program_computes_what_a_traced_one_does(cache, monkeypatch):
    with monkeypatch.context() as m:  # the store off: jax.jit as before
        m.setattr(program_store, "serialization_available", lambda: False)
        traced = run_study("regularized_evolution")
    assert not any(isinstance(p, StoredProgram) for p in program_cache._PROGRAMS.values())
    fresh_programs()
    cold = run_study("regularized_evolution")  # exports into the store
    (ask,) = stored_asks()
    assert ask.loaded is False
    files = sorted(os.listdir(cache / STORE_DIR))
    assert [f.split("-")[0] for f in files] == ["study_ask", "study_init", "study_tell"], files
    fresh_programs()
    warm = run_study("regularized_evolution")  # reads it
    (ask,) = stored_asks()
    assert ask.loaded is True
    assert traced == cold == warm
    assert ask._forward.count(-1) == 2  # it computes the tokens and the tell key; the state is handed back


@pytest.mark.filterwarnings("ignore:searcher .* searches 2 ranges on a grid")
def test_a_damaged_stored_program_is_exported_again(cache):
    first = run_study("local_search", 12)
    folder = cache / STORE_DIR
    for name in os.listdir(folder):
        (folder / name).write_bytes(b"not a program")
    fresh_programs()
    again = run_study("local_search", 12)
    (ask,) = stored_asks()
    assert ask.loaded is False and again == first
    fresh_programs()
    run_study("local_search", 12)
    assert stored_asks()[0].loaded is True  # replaced by a good file


def test_a_multi_fidelity_study_reads_its_programs_from_the_store(cache):
    cold = run_study("asha", 20)
    assert [p.loaded for p in stored_asks("mf_study_ask")] == [False]
    fresh_programs()
    warm = run_study("asha", 20)
    assert [p.loaded for p in stored_asks("mf_study_ask")] == [True]
    assert [p.loaded for p in stored_asks("mf_study_tell")] == [True]
    assert warm == cold


def test_a_study_on_continuous_ranges_reads_its_programs_from_the_store(cache):
    cold = run_study("tpe", 12)  # Float and Int ranges on fine grids, keyed by their declarations
    assert [p.loaded for p in stored_asks()] == [False]
    fresh_programs()
    assert run_study("tpe", 12) == cold
    assert [p.loaded for p in stored_asks()] == [True]


def test_a_space_whose_choices_print_differently_per_process_is_not_stored():
    from spaces.params import declarations_key, declared_space

    assert declarations_key(declared_space(SPACE, continuous=True)) is not None
    assert declarations_key(declared_space({"f": [object(), object()]}, continuous=True)) is None


def test_a_searcher_that_says_so_keeps_its_programs_traced(cache):
    run_study("random_search", 4)  # RandomSearch.stored_programs is False
    assert not any(isinstance(p, StoredProgram) for p in program_cache._PROGRAMS.values())
    assert not (cache / STORE_DIR).exists()


def test_the_key_follows_the_source_the_arguments_and_the_description(monkeypatch):
    specs = [jax.ShapeDtypeStruct((3,), "int32")]
    tree = jax.tree.structure((0,))
    key = program_store.program_key('{"what": "study_ask"}', tree, specs)
    assert key.startswith("study_ask-") and key.endswith(".jaxexport")
    assert program_store.program_key('{"what": "study_tell"}', tree, specs) != key
    assert program_store.program_key('{"what": "study_ask"}', tree, [jax.ShapeDtypeStruct((4,), "int32")]) != key
    monkeypatch.setattr(program_store, "source_digest", lambda: "edited")
    assert program_store.program_key('{"what": "study_ask"}', tree, specs) != key


def test_an_out_tree_that_is_not_the_programs_refuses(cache):
    f = stored_jit(lambda x: (x + 1, x), json.dumps({"what": "pair"}), lambda x: jax.tree.structure(0))
    with pytest.raises(ValueError, match="out_tree gives"):
        f(jax.numpy.ones(3))


def test_a_result_that_is_an_argument_is_handed_back_not_computed(cache):
    def make():
        return stored_jit(lambda x, y: (x, y + 1, x), json.dumps({"what": "forward"}),
                          lambda x, y: jax.tree.structure((0, 0, 0)))  # fmt: skip

    x, y = jax.numpy.arange(3), jax.numpy.ones(2)
    f = make()
    a, b, c = f(x, y)
    assert a is x and c is x and b.tolist() == [2.0, 2.0]
    (name,) = os.listdir(cache / STORE_DIR)
    data = (cache / STORE_DIR / name).read_bytes()
    assert data.startswith(program_store.MAGIC)
    assert json.loads(data[len(program_store.MAGIC) :].split(b"\n")[0]) == {"forward": [0, -1, 0], "lapack": False}
    g = make()  # as a second process: read from the store
    a, b, c = g(x, y)
    assert g.loaded is True and a is x and b.tolist() == [2.0, 2.0]
    a, b, c = g(jax.numpy.arange(4), y)  # other shapes than the stored program's: traced as they are
    assert a.tolist() == c.tolist() == [0, 1, 2, 3] and b.tolist() == [2.0, 2.0]
    np_x = np.arange(3)
    assert isinstance(g(np_x, y)[0], jax.Array)  # a host argument handed back comes back as a JAX array


def test_a_program_that_calls_lapack_says_so(cache):
    """A program with a LAPACK kernel is lowered after JAX starts them (its header says so); others skip it."""

    def make():
        return stored_jit(lambda a: jax.numpy.linalg.cholesky(a), json.dumps({"what": "chol"}),
                          lambda a: jax.tree.structure(0))  # fmt: skip

    a = jax.numpy.array([[4.0, 2.0], [2.0, 3.0]])
    assert make()(a).tolist() == np.linalg.cholesky(np.asarray(a)).tolist()
    (path,) = (cache / STORE_DIR).iterdir()
    assert json.loads(path.read_bytes().split(b"\n")[1])["lapack"] is True
    g = make()
    assert g(a).tolist() == np.linalg.cholesky(np.asarray(a)).tolist() and g.loaded is True and g._lapack is True


def test_a_header_that_does_not_match_its_program_is_exported_again(cache):
    def make():
        return stored_jit(lambda x: (x, x * 2), json.dumps({"what": "header"}), lambda x: jax.tree.structure((0, 0)))

    make()(jax.numpy.ones(2))
    (path,) = (cache / STORE_DIR).iterdir()
    body = path.read_bytes().split(b"\n", 2)[2]
    path.write_bytes(program_store.MAGIC + b'{"forward": [-1, -1]}\n' + body)  # says two results; it has one
    g = make()
    assert g(jax.numpy.ones(2))[1].tolist() == [2.0, 2.0] and g.loaded is False


def test_without_serialization_or_a_cache_it_is_a_plain_jit(monkeypatch, tmp_path):
    monkeypatch.setattr(program_store, "serialization_available", lambda: False)
    f = stored_jit(lambda x: x * 2, json.dumps({"what": "double"}), lambda x: jax.tree.structure(0))
    assert not isinstance(f, StoredProgram) and float(f(2.0)) == 4.0
    monkeypatch.undo()
    assert not isinstance(stored_jit(lambda x: x, None, lambda x: None), StoredProgram)  # nothing describes it


CHILD = """
import json, sys, warnings
warnings.simplefilter("ignore")
import jax.monitoring
import nas
from nas.searchers.regularized_evolution import RegularizedEvolution
compiles = []
jax.monitoring.register_event_duration_secs_listener(
    lambda event, secs, **_: compiles.append(event) if event == "/jax/core/compile/backend_compile_duration" else None)
calls = [0]
ask = RegularizedEvolution.ask
def counted(self, key, state):
    calls[0] += 1
    return ask(self, key, state)
RegularizedEvolution.ask = counted
space = {"lr": nas.Float(1e-4, 1e-1, log=True), "width": nas.Int(8, 256), "act": ["relu", "tanh", "gelu"]}
study = nas.Study(space, searcher="regularized_evolution", direction="minimize", seed=0, max_trials=100)
rows, later = [], 0
for i in range(60):  # past the random initial population: the mutation steps run too
    t = study.ask(); rows.append(t.tokens.tolist()); study.tell(t, t.params["lr"])
    later = len(compiles) if i == 0 else later
print(json.dumps({"traced": calls[0], "rows": rows, "compiles_after_first": len(compiles) - later,
                  "scipy": "scipy" in sys.modules}))
"""


def test_a_warm_second_process_traces_no_searcher_code(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_COMPILATION_CACHE")}
    env.update(NASJAX_COMPILATION_CACHE=str(tmp_path / "cache"), JAX_PLATFORMS="cpu",
               PYTHONPATH=os.pathsep.join(filter(None, [ROOT, env.get("PYTHONPATH")])))  # fmt: skip
    out = []
    for _ in range(2):
        p = subprocess.run([sys.executable, "-c", textwrap.dedent(CHILD)], env=env, cwd=ROOT, capture_output=True,
                           text=True, timeout=300)  # fmt: skip
        assert p.returncode == 0, p.stderr[-2000:]
        out.append(json.loads(p.stdout.strip().splitlines()[-1]))
    cold, warm = out
    assert cold["traced"] >= 1  # the first process traced the searcher's ask to export it
    assert warm["traced"] == 0  # the second read it
    assert warm["rows"] == cold["rows"]
    # one executable per program: a stored program's results are committed to the device, and arguments that
    # turned committed after the first step would compile the program again
    assert cold["compiles_after_first"] == warm["compiles_after_first"] == 0
    assert not cold["scipy"] and not warm["scipy"]  # no LAPACK start (SciPy's import) for programs without it
