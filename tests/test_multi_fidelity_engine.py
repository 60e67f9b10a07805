"""The multi-fidelity engine (nas/engine/multi_fidelity_runner.py) and tables with fidelities, checked
against clocks, orders and charges worked out by hand on a toy table."""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

from nas.core.multi_fidelity import Job, MultiFidelityOptions, MultiFidelitySearcher
from nas.engine.chunked_loop import run_chunked
from nas.engine.multi_fidelity_runner import make_mf_search
from spaces.base import CategoricalSpace
from spaces.benchmarks.tabular import TabularBenchmark

SPACE = CategoricalSpace("toy_mf", {"a": [0, 1, 2, 3], "b": [0, 1]})
BUDGETS = (1.0, 3.0, 9.0)


def toy_table(continues=False):
    """valid = 10 a + b + budget / 100; cost (seconds) = budget * (a + 1)."""
    table = {}
    for a in range(4):
        for b in range(2):
            table[(a, b)] = {
                "valid": [10 * a + b + f / 100 for f in BUDGETS],
                "test": [-(10 * a + b) - f / 100 for f in BUDGETS],
                "cost": [f * (a + 1) for f in BUDGETS],
            }
    t = TabularBenchmark.from_dict(name="toy_mf", space=SPACE, table=table, fidelities=BUDGETS, fidelity_unit="epochs")
    return t.replace(continues=continues)


@dataclasses.dataclass(frozen=True)
class ScriptOptions(MultiFidelityOptions):
    script: tuple = ()  # ((a, b, fidelity, parent), ...)


@struct.dataclass
class ScriptState:
    i: jax.Array
    told: jax.Array  # f32[len(script)]: scores in the order told
    n_told: jax.Array


class Scripted(MultiFidelitySearcher):
    """Asks the jobs of ``script`` in order, then none; records what it is told."""

    Options = ScriptOptions
    registry_name = "scripted"

    def init(self, key):
        n = len(self.options.script)
        return ScriptState(i=jnp.int32(0), told=jnp.full((n,), jnp.nan), n_told=jnp.int32(0))

    def ask(self, key, state):
        script = jnp.asarray(self.options.script, jnp.int32)
        row = script[jnp.minimum(state.i, len(self.options.script) - 1)]
        ok = state.i < len(self.options.script)
        return Job.make(row[:2], row[2], row[3], ok), state.replace(i=state.i + ok.astype(jnp.int32))

    def tell(self, key, job, score, state):
        return state.replace(told=state.told.at[state.n_told].set(score), n_told=state.n_told + 1), {"n": state.n_told}


def scripted(script, workers=1, max_queries=10):
    return Scripted(SPACE, ScriptOptions(fidelities=BUDGETS, workers=workers, max_queries=max_queries, script=script))


def test_table_with_fidelities_reads_each_level_and_defaults_to_the_top():
    t = toy_table()
    toks = jnp.array([[1, 0], [2, 1], [3, 1]], jnp.int32)
    res = t.query(jax.random.PRNGKey(0), toks, jnp.array([0, 2, 7]))
    np.testing.assert_allclose(np.asarray(res["valid"]), [10.01, 21.09, -np.inf], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(res["cost"]), [2.0, 27.0, 0.0])
    top = t.query(jax.random.PRNGKey(0), toks)  # no fidelity: the full table, as single-fidelity searchers see it
    np.testing.assert_allclose(np.asarray(top["valid"]), [10.09, 21.09, 31.09], rtol=1e-6)
    assert t.report_name == "test score" and t.space is SPACE and t.valid.shape == (8, 1)


def test_one_worker_is_sequential_with_full_charges():
    script = ((1, 0, 0, -1), (2, 0, 0, -1), (2, 0, 2, 0), (0, 1, 1, -1))
    s = scripted(script)
    h = jax.jit(make_mf_search(s))(jax.random.PRNGKey(0), toy_table())
    n = len(script)
    np.testing.assert_array_equal(np.asarray(h.tokens[:n]), [r[:2] for r in script])
    np.testing.assert_array_equal(np.asarray(h.fidelity), [0, 0, 2, 1] + [-1] * (s.max_evaluations - n))
    np.testing.assert_allclose(np.asarray(h.resource[:n]), [1, 1, 9, 3])  # a table does not continue: full budgets
    np.testing.assert_allclose(np.asarray(h.cost[:n]), [2, 3, 27, 3])  # budget * (a + 1) seconds
    np.testing.assert_allclose(np.asarray(h.finish[:n]), [2, 5, 32, 35])  # one worker: the clock adds up
    np.testing.assert_allclose(np.asarray(h.score[:n]), [10.01, 20.01, 20.09, 1.03], rtol=1e-6)
    assert np.all(np.asarray(h.score[n:]) == -np.inf)


def test_two_workers_report_results_as_they_finish():
    # worker 0: a=3 at 9 epochs (36 s); worker 1: a=0 at 1 (1 s), then a=1 at 3 (6 s, finishes at 7),
    # then a=0,b=1 at 1 (1 s, finishes at 8); worker 0 finishes at 36.
    script = ((3, 0, 2, -1), (0, 0, 0, -1), (1, 0, 1, -1), (0, 1, 0, -1))
    s = scripted(script, workers=2)
    h = jax.jit(make_mf_search(s))(jax.random.PRNGKey(0), toy_table())
    np.testing.assert_allclose(np.asarray(h.finish[:4]), [1, 7, 8, 36])
    np.testing.assert_array_equal(np.asarray(h.tokens[:4]), [[0, 0], [1, 0], [0, 1], [3, 0]])


def test_a_continuing_objective_charges_only_the_promotion():
    script = ((1, 0, 0, -1), (1, 0, 1, 0), (1, 0, 2, 1), (2, 0, 2, -1))
    h = jax.jit(make_mf_search(scripted(script)))(jax.random.PRNGKey(0), toy_table(continues=True))
    np.testing.assert_allclose(np.asarray(h.resource[:4]), [1, 2, 6, 9])
    np.testing.assert_allclose(np.asarray(h.cost[:4]), [2, 4, 12, 27])  # the continued fraction of the time


def test_dispatch_stops_once_the_budget_is_spent():
    script = tuple((a, b, 2, -1) for a in range(4) for b in range(2))  # 8 full trainings asked
    s = scripted(script, max_queries=3)  # budget: 3 full trainings
    h = jax.jit(make_mf_search(s))(jax.random.PRNGKey(0), toy_table())
    assert int(np.sum(np.asarray(h.fidelity) >= 0)) == 3 and float(np.sum(h.resource)) == 27.0


def test_chunked_and_resumed_runs_equal_one_scan(tmp_path):
    script = ((3, 0, 2, -1), (0, 0, 0, -1), (1, 0, 1, -1), (0, 1, 0, -1), (2, 1, 1, -1), (2, 1, 2, 1))
    s = scripted(script, workers=2)
    keys = jax.random.split(jax.random.PRNGKey(1), 3)
    whole = jax.jit(jax.vmap(make_mf_search(s), in_axes=(0, None)))(keys, toy_table())
    ckpt = str(tmp_path / "mf.npz")
    assert run_chunked(s, toy_table(), keys, chunk_steps=2, ckpt_path=ckpt, progress=False, max_chunks=2) is None
    resumed = run_chunked(s, toy_table(), keys, chunk_steps=2, ckpt_path=ckpt, progress=False)
    for a, b in zip(jax.tree.leaves(whole), jax.tree.leaves(resumed)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_options_refuse_batches_and_bad_fidelities():
    with pytest.raises(ValueError, match="workers=W"):
        ScriptOptions(fidelities=BUDGETS, batch_size=4)
    with pytest.raises(ValueError, match="increasing"):
        ScriptOptions(fidelities=(3, 1))
    with pytest.raises(ValueError, match="one value per fidelity"):
        TabularBenchmark.from_dict(name="x", space=SPACE, table={(0, 0): {"valid": [1.0]}}, fidelities=(1, 2),
                                   fidelity_unit="epochs")  # fmt: skip


def test_the_progress_bar_counts_evaluations_not_steps(capsys):
    script = ((3, 0, 2, -1), (0, 0, 0, -1), (1, 0, 1, -1), (0, 1, 0, -1), (2, 1, 1, -1), (2, 1, 2, 1))
    s = scripted(script, workers=2)  # 6 evaluations in a run of s.num_steps steps
    keys = jax.random.split(jax.random.PRNGKey(1), 2)
    run_chunked(s, toy_table(), keys, chunk_steps=s.num_steps, progress=True, label="scripted")
    last = capsys.readouterr().err.strip().split("\r")[-1]
    assert s.num_steps > 6 and "6 evaluations/seed" in last, last


def test_the_run_kind_is_the_searchers_and_says_what_a_chunk_line_adds():
    from nas.engine.chunked_loop import chunk_bounds
    from nas.engine.run_kinds import MULTI_FIDELITY, SINGLE_FIDELITY, run_kind
    from nas.searchers import make_searcher

    script = ((3, 0, 2, -1), (0, 0, 0, -1), (1, 0, 1, -1), (0, 1, 0, -1), (2, 1, 1, -1), (2, 1, 2, 1))
    s = scripted(script, workers=2)
    assert run_kind(s) is MULTI_FIDELITY and run_kind(make_searcher("random_search", SPACE)) is SINGLE_FIDELITY
    lines = []
    run_chunked(s, toy_table(), jax.random.split(jax.random.PRNGKey(1), 2), progress=False, on_chunk=lines.append)
    assert len(lines) == len(chunk_bounds(s)) - 1
    assert lines[-1]["evaluations_mean"] == 6 and lines[-1]["resource_spent_mean"] > 0, lines[-1]
