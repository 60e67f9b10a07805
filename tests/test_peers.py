"""Peer baselines (nas/experiment/peers.py): Optuna's TPE on our objectives through the host ask/tell loop and the
experiment path, on a synthetic objective (no training; the MLP objective is tested in test_mlp_training.py)."""

import json

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest
from flax import struct

from nas.experiment import peers
from nas.experiment.config import ConfigError, searcher_configs, validate_config
from nas.experiment.run import run_experiment
from spaces.benchmarks.objective import Objective
from spaces.benchmarks.registry import BENCHMARKS, register_benchmark
from spaces.hpo import HPOSpace, categorical, floating, grid, integer

pytest.importorskip("optuna", reason="the TPE peer needs Optuna: pip install optuna")

SPACE = HPOSpace(
    "peer_toy",
    [
        categorical("solver", ["sgd", "adam"]),
        floating("lr", 1e-4, 1e-1, 7, log=True),
        grid("momentum", [0.0, 0.5, 0.9, 0.99], when={"solver": ["sgd"]}),
        integer("width", 8, 128, num=5, log=True),
        integer("depth", 1, 6),
    ],
)
TARGET = np.asarray([0, 5, 2, 3, 4])  # sgd, lr 0.0316, momentum 0.9, width 64, depth 5


@struct.dataclass
class Bowl(Objective):
    """A smooth synthetic score: minus the squared token distance to TARGET (inactive tokens at 0); a pytree
    without leaves (the objective contract)."""

    space = SPACE
    name, has_test, report_kind = "test/bowl", False, "neg"

    def query(self, key, tokens):
        del key
        tokens = jax.vmap(SPACE.canonical)(tokens)
        v = -jnp.sum((tokens - jnp.asarray(TARGET)) ** 2, -1).astype(jnp.float32)
        return {"valid": v, "test": v, "cost": jnp.ones_like(v)}


if "test/bowl" not in BENCHMARKS:
    register_benchmark("test/bowl", lambda: Bowl())


def run_tpe(keys, max_queries, **options):
    peer = peers.make_peer("tpe", SPACE, max_queries=max_queries, **options)
    return peers.run_peer(peer, Bowl(), keys, progress=False)


def test_tpe_queries_distinct_configurations_and_learns():
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    h = run_tpe(keys, max_queries=30, seeds_per_group=1, fallback="mutate")
    sid = jax.jit(jax.vmap(jax.vmap(SPACE.string_id)))
    ids = np.asarray(sid(jnp.asarray(h.tokens)))
    assert h.score.shape == (2, 30) and np.all(ids >= 0)
    assert all(len(set(row.tolist())) == 30 for row in ids)  # never the same configuration twice
    np.testing.assert_array_equal(h.tokens, jax.vmap(jax.vmap(SPACE.canonical))(jnp.asarray(h.tokens)))
    # after its 10 random startup trials TPE proposes better configurations than the random ones
    assert h.score[:, 20:].mean() > h.score[:, :10].mean() + 1.0


def test_tpe_checkpoint_resume_matches(tmp_path):
    """Deterministic: an interrupted run resumed from its checkpoint equals an uninterrupted one."""
    keys = jax.random.split(jax.random.PRNGKey(1), 3)
    peer = peers.make_peer("tpe", SPACE, max_queries=12, seeds_per_group=1, fallback="uniform")
    ckpt = str(tmp_path / "tpe.npz")
    assert peers.run_peer(peer, Bowl(), keys, ckpt_path=ckpt, progress=False, max_chunks=2) is None
    resumed = peers.run_peer(peer, Bowl(), keys, ckpt_path=ckpt, progress=False)
    full = peers.run_peer(peer, Bowl(), keys, progress=False)
    np.testing.assert_array_equal(resumed.tokens, full.tokens)
    np.testing.assert_array_equal(resumed.score, full.score)


def test_tpe_options_are_checked():
    with pytest.raises(ValueError, match="batch_size must be 1"):
        peers.make_peer_options("tpe", batch_size=4)
    with pytest.raises(ValueError, match="fallback must be one of"):
        peers.make_peer_options("tpe", fallback="nearest")
    with pytest.raises(ValueError, match="n_ei_candidate"):
        peers.make_peer_options("tpe", n_ei_candidate=4)
    assert peers.ordinal_tokens(SPACE) == [False, True, True, True, True]


def test_tpe_in_an_experiment(tmp_path):
    """The train command's path: config validation, the workdir, metrics lines, reports (our searchers run the
    same path in tests/test_train_cli.py)."""
    config = ml_collections.ConfigDict(
        {
            "benchmark": "test/bowl", "protocol": "mean", "test_data": "", "data_path": "", "num_trials": 2,
            "max_queries": 12, "seed": 0, "report_every": 4, "chunk_steps": 0, "only": "",
            "searchers": searcher_configs(tpe={"name": "tpe", "n_startup_trials": 4}),
        }
    )  # fmt: skip
    validate_config(config)
    summary = run_experiment(config, str(tmp_path / "wd"), progress=False)
    assert set(summary["searchers"]) == {"tpe"}
    assert summary["searchers"]["tpe"]["repeated_queries"] == 0
    lines = [json.loads(x) for x in (tmp_path / "wd" / "metrics.jsonl").read_text().splitlines()]
    assert any(x["searcher"] == "tpe" and "repeats" in x["metrics"] for x in lines)
    bad = config.copy_and_resolve_references()
    bad.searchers.tpe.n_startup_trials = -1
    with pytest.raises(ConfigError, match="searchers.tpe"):
        validate_config(bad)
    from nas.experiment.plan import make_plan

    assert make_plan(config).searchers["tpe"].runs_on_host
    with pytest.MonkeyPatch.context() as m:  # a multi-process run: refused when the plan is made, before any work
        m.setattr(jax, "process_count", lambda: 2)
        with pytest.raises(ConfigError, match=r"\['tpe'\] run on the host of one process; run them without --distr"):
            make_plan(config, str(tmp_path / "other"))
    assert not (tmp_path / "other").exists()


def test_tpe_says_when_it_compiles_and_shows_every_query(capsys):
    @struct.dataclass
    class NewBowl(Bowl):  # another pytree type: its query program is compiled afresh in this process
        pass

    peer = peers.make_peer("tpe", SPACE, max_queries=12, seeds_per_group=1, n_ei_candidates=7)
    peers.run_peer(peer, NewBowl(), jax.random.split(jax.random.PRNGKey(5), 2), progress=True, label="tpe_toy")
    err = capsys.readouterr().err.replace("\r", "\n").splitlines()
    assert [x.split(" ... ")[0] for x in err if "compiling" in x] == ["compiling tpe_toy"]  # both groups: one shape
    bars = [x.split("] ")[1].split(",")[:2] for x in err if x.strip().startswith("tpe_toy [")]
    assert bars[:2] == [["0/2 seed groups", " 1 queries/seed"], ["0/2 seed groups", " 2 queries/seed"]]
    assert ["1/2 seed groups", " 12 queries/seed"] in bars and bars[-1] == ["2/2 seed groups", " 12 queries/seed"]
    assert len(bars) == 2 * 12 + 2  # a redraw per query, and one per finished group


def test_peers_are_registered_beside_the_searchers_and_the_command_names_none():
    """A config entry names a compiled searcher or a peer through one lookup; the class says which."""
    import os

    from nas.experiment import registry
    from nas.experiment.peer_base import Peer
    from spaces.names import UnknownName

    assert set(peers.available_peers()) == {"tpe", "syne_tune", "optuna_mo", "syne_tune_morea"}
    for name, cls in peers.PEERS.items():
        assert issubclass(cls, Peer) and cls.registry_name == name and registry.runs_on_host(name)
    assert not registry.runs_on_host("random_search") and not registry.runs_on_host("asha")
    assert registry.is_multi_fidelity("syne_tune") and registry.is_multi_fidelity("asha")
    assert not registry.is_multi_fidelity("tpe")
    assert registry.repeats_reason("syne_tune", {}) == "Syne Tune's random searcher samples with replacement"
    assert registry.repeats_reason("tpe", {"repeats": "requery"}) == "plain Optuna re-queries repeated proposals"
    assert registry.repeats_reason("random_search", {}) == "the space is nearly exhausted"
    with pytest.raises(UnknownName, match=r"unknown searcher 'tpee'.*Did you mean \['tpe'\]"):
        registry.registered_class("tpee")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for path in ("scripts/train.py", "nas/experiment/run.py", "nas/experiment/plan.py"):
        source = open(os.path.join(root, path), encoding="utf-8").read()
        assert not [n for n in peers.PEERS if f'"{n}"' in source], path
        assert "isinstance(searcher, peers.Peer)" not in source and "peers.PEERS" not in source, path
