"""The multi-fidelity searchers (successive halving, Hyperband, BOHB, ASHA, the multi-fidelity BANANAS)
against their papers' schedules and rules, on hand-made tables (tests/mf_tables.py)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nas.core import ladders
from nas.core.multi_fidelity import Job
from nas.engine.multi_fidelity_runner import make_mf_search, mf_init_state, mf_run_steps
from nas.searchers import available_searchers, make_searcher
from nas.searchers.bohb import good_and_bad
from nas.searchers.observations import observations_init, observe
from tests.mf_golden import GOLDEN, digest, matches
from tests.mf_tables import BUDGETS, PAPER_BUDGETS, SPACE, python_engine, score, toy_table
from tests.searcher_settings import cheap_options, slow_marks

MF_SEARCHERS = available_searchers(multi_fidelity=True)


def build(name, budgets=BUDGETS, **over):
    opts = {"max_queries": 6, **cheap_options(name), **over}
    return make_searcher(name, SPACE, fidelities=budgets, **opts)


def run(searcher, table, seed=0):
    metrics = ("size",) if searcher.num_objectives > 1 else ()  # tests/mf_tables.py's metric
    h = jax.jit(make_mf_search(searcher, metrics))(jax.random.PRNGKey(seed), table)
    done = np.asarray(h.fidelity) >= 0
    return {k: np.asarray(v)[done] for k, v in vars(h).items() if k != "metrics"}


def test_hyperband_brackets_are_the_papers_table():
    """Li et al. (2018), Table 1: R = 81, eta = 3, (n_i, r_i) per bracket s = 4..0."""
    paper = [
        [(81, 1), (27, 3), (9, 9), (3, 27), (1, 81)],
        [(34, 3), (11, 9), (3, 27), (1, 81)],
        [(15, 9), (5, 27), (1, 81)],
        [(8, 27), (2, 81)],
        [(5, 81)],
    ]
    hb = build("hyperband", PAPER_BUDGETS, eta=3)
    assert [[(n, PAPER_BUDGETS[f]) for f, n in b] for b in hb.schedule_brackets] == paper
    sh = build("successive_halving", PAPER_BUDGETS, eta=3)
    assert [[(n, PAPER_BUDGETS[f]) for f, n in b] for b in sh.schedule_brackets] == paper[:1]


def test_two_fidelities_degrade_to_one_and_two_rung_brackets():
    hb = build("hyperband", (12.0, 200.0), eta=3)
    assert hb.schedule_brackets == (((0, 3), (1, 1)), ((1, 2),))
    text = hb.schedule("epochs")
    assert "22.22, 66.67, 200 epochs run at the fidelities 12, 200 epochs (3 rungs merged into 2)" in text
    assert ladders.rung_ladder((4.0, 12.0, 36.0, 108.0), 3, 0, 3) == (0, 1, 2, 3)  # NAS-Bench-101's grid is the paper's
    with pytest.raises(ValueError, match="not one of the objective's fidelities"):
        build("hyperband", min_budget=2.0)


def test_successive_halving_promotes_exactly_the_top_third():
    s = build("successive_halving", max_queries=10)  # one bracket: 9 x 1, 3 x 3, 1 x 9 epochs, repeated
    assert s.schedule_brackets == (((0, 9), (1, 3), (2, 1)),)
    h = run(s, toy_table())
    for start in range(0, len(h["fidelity"]) - 12, 13):  # each bracket: 13 evaluations in rung order
        part = slice(start, start + 13)
        fid, toks, sc = h["fidelity"][part], h["tokens"][part], h["score"][part]
        assert fid.tolist() == [0] * 9 + [1] * 3 + [2]
        started = {tuple(t): i for i, t in enumerate(toks[:9])}  # ties go to the configuration started first
        for lo, n, keep in ((0, 9, 3), (9, 3, 1)):
            first = [started[tuple(t)] for t in toks[lo : lo + n]]
            best = np.lexsort((first, -sc[lo : lo + n]))[:keep]
            want = {tuple(toks[lo + i]) for i in best}
            assert {tuple(t) for t in toks[lo + n : lo + n + keep]} == want
        assert [score(t, BUDGETS[f]) for t, f in zip(toks, fid)] == pytest.approx(sc.tolist(), rel=1e-6)


def test_synchronous_rungs_wait_for_every_result():
    h = run(build("successive_halving", max_queries=10, workers=3), toy_table())
    start = h["finish"] - np.asarray([BUDGETS[f] * (1 + t[0]) for t, f in zip(h["tokens"], h["fidelity"])])
    for f in (1, 2):  # the first bracket: a rung starts only after every result of the rung below is in
        first = np.nonzero(h["fidelity"] == f)[0][: (3 if f == 1 else 1)]
        below = np.nonzero(h["fidelity"] == f - 1)[0][: (9 if f == 1 else 3)]
        assert start[first].min() >= h["finish"][below].max() - 1e-4


def asha_job(s, state, key=0):
    job, state = jax.jit(s.ask)(jax.random.PRNGKey(key), state)
    return job, state


def test_asha_promotions_on_a_hand_made_order_of_arrivals():
    """Algorithm 2 with eta = 2 on rungs 1, 3, 9: results told in a hand-chosen order."""
    s = build("asha", eta=2, workers=3, max_queries=50)
    assert s.ladder == (0, 1, 2)
    tell = jax.jit(s.tell)
    state = jax.jit(s.init)(jax.random.PRNGKey(0))
    jobs = []
    for i in range(3):  # three workers start three new configurations at the bottom rung
        job, state = asha_job(s, state, i)
        assert int(job.fidelity) == 0 and int(job.parent) == -1 and bool(job.ok)
        jobs.append(job)

    def told(job, value, fidelity=None):
        j = job if fidelity is None else job.replace(fidelity=jnp.int32(fidelity))
        return tell(jax.random.PRNGKey(9), j, jnp.float32(value), state)[0]

    state = told(jobs[1], 5.0)  # rung 0: {c1: 5}, top floor(1/2) = 0: nothing to promote
    job, state = asha_job(s, state, 3)
    assert int(job.fidelity) == 0 and not np.array_equal(job.tokens, jobs[1].tokens)
    c3 = job
    state = told(jobs[0], 7.0)  # rung 0: {c1: 5, c0: 7}: top 1 = c0
    job, state = asha_job(s, state, 4)
    assert np.array_equal(job.tokens, jobs[0].tokens) and (int(job.fidelity), int(job.parent)) == (1, 0)
    c0_up = job
    state = told(jobs[2], 6.0)  # rung 0: {5, 7, 6}: top 1 = c0, promoted already: a new configuration
    job, state = asha_job(s, state, 5)
    assert int(job.fidelity) == 0
    state = told(c3, 9.0)  # rung 0: {5, 7, 6, 9}: top 2 = c3, c0: c3 goes up
    state = told(c0_up, 3.0)  # rung 1: {c0: 3}: top 0
    job, state = asha_job(s, state, 6)
    assert np.array_equal(job.tokens, c3.tokens) and int(job.fidelity) == 1
    state = told(job, 4.0)  # rung 1: {c0: 3, c3: 4}: top 1 = c3, from the highest rung first
    job, state = asha_job(s, state, 7)
    assert np.array_equal(job.tokens, c3.tokens) and (int(job.fidelity), int(job.parent)) == (2, 1)


def test_asha_promotes_from_the_top_of_each_rung_as_results_arrive():
    """4 workers on the simulated clock: each promotion, when asked for, is in the top floor(n / eta) of the
    results its rung held then (the engine's arrival order, replayed by ``python_engine``)."""
    s = build("asha", workers=4, max_queries=8)
    h = python_engine(s, toy_table(), jax.random.PRNGKey(0))
    promos = 0
    for i in np.nonzero(h["fidelity"] > 0)[0]:
        below = (h["fidelity"] == h["fidelity"][i] - 1) & (np.arange(len(h["score"])) < h["told"][i])
        quota = int(np.sum(below)) // 3
        assert quota >= 1, i
        threshold = np.sort(h["score"][below])[::-1][quota - 1]
        own = below & np.all(h["tokens"] == h["tokens"][i], axis=1)  # its result at the rung below
        assert own.sum() == 1 and h["score"][own][0] >= threshold, i
        promos += 1
    assert promos >= 5


def test_bohb_samples_from_its_model_only_once_a_budget_has_enough_points():
    s = build("bohb", random_fraction=0.0, max_queries=10)  # D = 3 tokens: N_min = 4; a model needs 8 results
    obs = observations_init(20, 3)
    for i in range(8):
        job = Job.make(SPACE.from_spec({"a": i % 5, "b": i // 5, "c": 0}), 0)
        _, _, has = good_and_bad(obs, 0, s.n_min, 15, 3)
        assert not bool(has) and int(s.model_fidelity(obs)) == -1
        obs = observe(obs, job, jnp.float32(i))
    assert int(s.model_fidelity(obs)) == 0
    # one worker, one result per engine step: the first 8 new configurations (1 epoch) are uniform; with their
    # 8 results the 1-epoch budget has a model, and the 9th configuration comes from its KDEs
    key = jax.random.PRNGKey(0)
    state = mf_init_state(s, key)
    _, metrics = jax.jit(lambda st, table: mf_run_steps(s, table, key, st, 12))(state, toy_table())
    assert np.asarray(metrics["from_model"]).tolist() == [0] * 8 + [1] * 4


VARIANTS = [(n, {}) for n in MF_SEARCHERS] + [("mf_bananas", {"variant": "fidelity_feature"})]
VARIANT_PARAMS = [  # the model-based searcher's runs are slow (tests/searcher_settings.py)
    pytest.param(n, e, id=n + "".join(f"-{v}" for v in e.values()), marks=slow_marks(n))
    for n, e in VARIANTS
]


@pytest.mark.parametrize("name,extra", VARIANT_PARAMS)
def test_python_loop_equals_scan_no_repeated_pairs(name, extra):
    workers = 2 if name == "asha" else 1
    s = build(name, workers=workers, **extra)
    scan = run(s, toy_table(), 3)
    if not extra:  # an option of a searcher tested here changes its hooks, not its ask/tell plumbing
        loop = python_engine(s, toy_table(), jax.random.PRNGKey(3))
        for k in ("tokens", "fidelity", "score", "finish"):
            np.testing.assert_array_equal(loop[k], scan[k], err_msg=f"{name}: {k}")
    case = name + "".join(f"-{v}" for v in extra.values())
    if case in GOLDEN and name != "successive_halving":  # its default dispatch order changed (test_mf_histories)
        assert matches(case, digest(scan)), f"{case}: the history the code gave before changed"
    ids = np.asarray(jax.vmap(SPACE.string_id)(jnp.asarray(scan["tokens"])))
    pairs = list(zip(ids.tolist(), scan["fidelity"].tolist()))
    assert np.all(ids >= 0) and len(set(pairs)) == len(pairs), f"{name} repeated a (string, fidelity)"
    assert np.any(scan["fidelity"] == len(BUDGETS) - 1), f"{name} never reached the top fidelity"
    assert float(np.sum(scan["resource"])) >= s.max_resource  # the budget is spent
