"""Spaces, tables and architectures refuse what cannot be right, with an error naming the argument and the bad
value: non-finite or non-integer grid arguments, an empty space, infinite or missing scores and costs, an empty
table, an architecture of another space or of the wrong type, a NAS-Bench-101 matrix with non-integer entries,
fidelities that are not increasing budgets, a language space whose graph has a cycle (in the space or inside a
substitution). Meta-training refuses step sizes that diverge."""

import numpy as np
import pytest

from nas.searchers import make_options
from spaces import hpo
from spaces.base import CategoricalSpace
from spaces.benchmarks.tabular import TabularBenchmark
from spaces.language import Architecture, D, LanguageSpace
from spaces.language import flax_modules as fm
from spaces.language.examples import EXAMPLES
from spaces.language.flatten import FlatLanguageSpace
from spaces.language.library import siso_sequential, substitution_module
from spaces.nb101 import SPACE as NB101
from spaces.nb201 import SPACE
from surrogates.deep_kernel import DeepKernelConfig
from surrogates.reptile import ReptileConfig

NAN, INF = float("nan"), float("inf")
FIG1 = LanguageSpace(EXAMPLES["figure1"], "figure1")
ARCH = Architecture((100, 0.5), "figure1")
NB101_OPS = ["input", "conv3x3-bn-relu", "output"]
HALF_EDGE = [[0, 0.5, 0], [0, 0, 1], [0, 0, 0]]  # astype(int) would read 0.5 as no edge


def cycle():
    """Dense -> Concat(in0); Concat -> Dense2 -> Concat(in1): a loop through Concat."""
    a_in, a_out = fm.dense(D([10, 20]))
    c_in, c_out = fm.concat(2)
    b_in, b_out = fm.dense(D([10]))
    c_in["in0"].connect(a_out["out"])
    c_in["in1"].connect(b_out["out"])
    b_in["in"].connect(c_out["out"])
    return a_in, c_out


def cycle_inside():
    """A substitution module whose subspace loops (the outer space is a plain chain)."""
    return siso_sequential([fm.dense(D([8])), substitution_module("Loop", lambda dh: cycle(), {"h": D([0])},
                                                                 ["in"], ["out"])])  # fmt: skip


def table(**arrays):
    kwargs = {"valid": [[90.0, 91.0], [80.0, NAN]], "string_ids": [0, 1], **arrays}
    return lambda: TabularBenchmark.build(name="t", space=SPACE, **kwargs)


BAD = [
    (lambda: hpo.floating("lr", NAN, 1.0, 3), r"'lr': low and high must be finite numbers, got nan, 1.0"),
    (lambda: hpo.floating("lr", 1e-4, INF, 3, log=True), r"'lr': low and high must be finite numbers, got 0.0001, inf"),
    (lambda: hpo.floating("lr", 0.1, 1.0, 2.5), r"'lr': num \(grid points\) must be an integer >= 1, got 2.5"),
    (lambda: hpo.floating("lr", 0.1, 1.0, True), r"'lr': num \(grid points\) must be an integer >= 1, got True"),
    (lambda: hpo.integer("width", 8, 64, num=3.0), r"'width': num \(grid points\) must be an integer >= 1, got 3.0"),
    (lambda: hpo.grid("m", [0.0, NAN]), r"'m': grid values must be finite numbers, got \[0.0, nan\]"),
    (lambda: hpo.grid("m", [0.0, INF]), r"'m': grid values must be finite numbers, got \[0.0, inf\]"),
    (lambda: hpo.categorical("act", ["relu", NAN]), r"'act': numeric choices must be finite, got \[nan\]"),
    (lambda: NB101.from_spec({"matrix": HALF_EDGE, "ops": NB101_OPS}), r"nb101 spec: .*non-integer"),
    (lambda: hpo.HPOSpace("empty", []), r"empty: an HPOSpace needs one or more hyperparameters"),
    (lambda: hpo.HPOSpace("odd", ["lr"]), r"odd: an HPOSpace needs one or more hyperparameters .* got \['lr'\]"),
    (table(test=[5.0, 6.0], valid=[[90.0], [INF]]), r"t: valid\[1, 0\] = inf is not a finite score"),
    (table(valid=[[90.0], [-INF]]), r"t: valid\[1, 0\] = -inf is not a finite score"),  # not "test"
    (table(valid=np.zeros((0, 2))), r"t: valid must be .* with one row or more, got shape \(0, 2\)"),
    (table(cost=[1.0, NAN]), r"t: cost\[1\] = nan is not a finite cost >= 0"),
    (table(cost=[-1.0, 2.0]), r"t: cost\[0\] = -1.0 is not a finite cost >= 0"),
    (table(test=[NAN, 1.0]), r"t: test\[0\] = nan is not a finite score"),
    (lambda: FIG1.replay(Architecture((100, 0.5), "figure4")), "space 'figure4' cannot be replayed into .*'figure1'"),
    (lambda: FIG1.replay({"space": "figure1", "values": 5}), r"an architecture in JSON is .*got \{'space'"),
    (lambda: FIG1.replay(5), "an architecture is an Architecture, .* got 5"),
    (lambda: Architecture.from_json('{"space": "figure1", "values": [100'), "not an architecture in JSON"),
    (lambda: Architecture.from_json(None), "not an architecture in JSON"),
    (lambda: Architecture.from_json('{"space": 3, "values": []}'), "space is a name .* got 3"),
    (lambda: FlatLanguageSpace(FIG1).from_spec({"space": "other", "values": [100, 0.5]}), "space 'other' cannot"),
    (lambda: FlatLanguageSpace(FIG1).from_spec([100, 0.5, 3]), "the architecture has 3 values, the space takes 2"),
    (lambda: ReptileConfig(inner_lr=-1e-3), r"inner_lr must be a finite number > 0, got -0.001"),
    (lambda: ReptileConfig(inner_lr=NAN), "inner_lr must be a finite number > 0, got nan"),
    (lambda: ReptileConfig(outer_lr=1.5), r"outer_lr \(eta_REP\) must be in \(0, 1\], got 1.5"),
    (lambda: ReptileConfig(inner_steps=2.5), "inner_steps must be an integer, got 2.5"),
    (lambda: DeepKernelConfig(hidden=0), r"sizes must be integers >= 1, got \{'hidden': 0\}"),
    (lambda: DeepKernelConfig(min_noise=-1.0), "need min_noise > 0"),
    (lambda: TabularBenchmark.from_dict(name="t", space=SPACE, table={(0,) * 6: 1.0}, fidelities=200,
                                        fidelity_unit="epochs"), r"t: fidelities must be a list of .* got 200"),
    (lambda: TabularBenchmark.from_dict(name="t", space=SPACE, table={(0,) * 6: 1.0}, fidelities=(12, NAN),
                                        fidelity_unit="epochs"), r"t: fidelities must be finite, positive"),
    (lambda: make_options("hyperband", fidelities=5), r"option fidelities must be increasing budgets, got 5"),
    (lambda: CategoricalSpace("c", {"lr": [0.1, NAN]}), r"c: hyperparameter 'lr' lists values that are not finite"),
    (lambda: CategoricalSpace("c", {}), r"c: a CategoricalSpace needs one or more hyperparameters, got \{\}"),
    (lambda: TabularBenchmark.from_dict(name="t", space=SPACE, table=[1.0]), r"t: the table is a dict .* got a list"),
    (lambda: TabularBenchmark.from_dict(name="t", space=SPACE, table={(0,) * 6: "high"}),
     r"t: entry for \(0, 0, 0, 0, 0, 0\): values must be numbers"),
    (lambda: LanguageSpace(cycle, "cyc").build(), r"the search space is not a directed acyclic graph: .* Concat-1"),
    (lambda: FlatLanguageSpace(LanguageSpace(cycle, "cyc")), r"the search space cyc is not a directed acyclic"),
    (lambda: LanguageSpace(cycle_inside, "loop").replay([0]), r"the substitution of Loop-1 is not a directed acyclic"),
]


@pytest.mark.parametrize("make, message", BAD, ids=[m.split(":")[0][:40] for _, m in BAD])
def test_what_cannot_be_right_is_refused_naming_the_argument(make, message):
    with pytest.raises(ValueError, match=message) as e:
        make()
    assert "\n" not in str(e.value)


def test_the_checks_keep_what_is_right():
    assert hpo.floating("lr", 1e-3, 1e-1, 3, log=True).values == (0.001, 0.01, 0.1)
    assert hpo.integer("w", 8, 64, num=np.int64(4), log=True).values == (8, 16, 32, 64)
    bench = table(cost=[0.0, 2.0])()  # NaN marks a missing seed: still a table
    assert bench.n_seeds.tolist() == [2, 1]
    assert FlatLanguageSpace(FIG1).from_spec(ARCH).tolist() == FlatLanguageSpace(FIG1).from_spec([100, 0.5]).tolist()
    assert FIG1.replay(Architecture.from_json(ARCH.to_json())) is not None
