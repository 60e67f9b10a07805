"""Multi-fidelity searchers in experiments: configs fill in the benchmark's fidelities, runs resume bit for bit,
workdirs keep the multi-fidelity history fields, and reports read every searcher against compute."""

import json

import ml_collections
import numpy as np
import pytest

from configs import default
from nas.experiment.config import ConfigError, searcher_configs, searcher_options_of
from nas.experiment.cost_axis import budget_summary, running_axes
from nas.experiment.report import clean, format_table
from nas.experiment.run import run_experiment
from nas.experiment.workdir import HISTORY_FIELDS, MF_HISTORY_FIELDS, Workdir
from tests.mf_tables import BUDGETS

SEARCHERS = {
    "hyperband": {"name": "hyperband"},
    "asha": {"name": "asha", "workers": 2},
    "bohb": {"name": "bohb"},
    "random_search": {"name": "random_search"},
}


def mf_config(**searchers):
    config = ml_collections.ConfigDict(default.get_config().to_dict())
    config.benchmark = "test/toy_mf"
    config.num_trials, config.max_queries, config.report_every, config.chunk_steps = 2, 6, 2, 7
    config.searchers = searcher_configs(**(searchers or SEARCHERS))
    return config


def test_fidelities_come_from_the_benchmark_and_a_mismatch_is_refused():
    config = mf_config()
    assert config.searchers.hyperband.fidelities == ()  # listed, filled in from the benchmark
    assert searcher_options_of(config, "hyperband", BUDGETS).fidelities == BUDGETS
    assert not hasattr(searcher_options_of(config, "random_search", BUDGETS), "fidelities")
    config.searchers.hyperband.fidelities = (1.0, 2.0, 4.0)
    with pytest.raises(ConfigError, match=r"hyperband.fidelities=\(1.0, 2.0, 4.0\) differ from the benchmark's"):
        searcher_options_of(config, "hyperband", BUDGETS)


@pytest.mark.slow
def test_a_multi_fidelity_run_resumes_bit_for_bit_and_reports_against_compute(tmp_path):
    config = mf_config()
    summary = run_experiment(config, str(tmp_path / "whole"), progress=False)
    assert run_experiment(config, str(tmp_path / "part"), progress=False, max_chunks=1) is None
    resumed = run_experiment(config, str(tmp_path / "part"), progress=False)
    assert json.dumps(clean(resumed)) == json.dumps(clean(summary))
    for label in SEARCHERS:
        a = Workdir(str(tmp_path / "whole")).load_history(label)
        b = Workdir(str(tmp_path / "part")).load_history(label)
        fields = HISTORY_FIELDS + (MF_HISTORY_FIELDS if label != "random_search" else ())
        assert sorted(a) == sorted(fields)
        for k in fields:
            np.testing.assert_array_equal(a[k], b[k], err_msg=f"{label}: {k}")
    assert summary["fidelities"] == list(BUDGETS) and summary["fidelity_unit"] == "epochs"
    for label, s in summary["searchers"].items():
        assert s["repeated_queries"] == 0, label
        assert s["budget"]["fractions"] == [0.1, 0.25, 0.5, 1.0] and s["budget"]["full_evaluations"][-1] == 6
        assert s["budget"]["workers"] == (2 if label == "asha" else 1)
        assert s["budget"]["trials_with_incumbent"][-1] == 2 and len(s["cost_mean"]) == len(s["queries"])
    rs = summary["searchers"]["random_search"]  # a single-fidelity searcher: each query one full training
    assert rs["queries"] == [2, 3, 4, 6] and rs["wallclock_mean"] == rs["cost_mean"]  # 3: half the budget
    table = format_table(summary)
    assert "| asha | 2 |" in table and "cost at 100 %" in table and "budget 6 full evaluations (9 epochs each)" in table
    head = (tmp_path / "whole" / "results.csv").read_text().splitlines()[0]
    assert head.endswith("metric,protocol,budget_fraction,cost_mean,wallclock_mean")
    assert json.loads((tmp_path / "whole" / "summary.json").read_text())["searchers"]["asha"]["budget"]


def test_cost_sums_and_budget_points_are_exact():
    """Two hand-made multi-fidelity trials (budgets 1, 3, 9; budget 2 full evaluations = 18 resource)."""
    h = {
        "score": np.array([[5.0, 6.0, 7.0, 4.0, -np.inf], [5.0, 9.0, 8.0, 1.0, 2.0]]),
        "report_score": np.array([[50.0, 60.0, 70.0, 40.0, 0.0], [50.0, 90.0, 80.0, 10.0, 20.0]]),
        "fidelity": np.array([[0, 0, 1, 2, -1], [2, 0, 0, 2, 2]]),
        "resource": np.array([[1.0, 1.0, 3.0, 9.0, 0.0], [9.0, 1.0, 1.0, 9.0, 9.0]]),
        "cost": np.array([[2.0, 3.0, 6.0, 27.0, 0.0], [20.0, 2.0, 2.0, 18.0, 18.0]]),
        "finish": np.array([[2.0, 5.0, 11.0, 38.0, 0.0], [10.0, 11.0, 12.0, 21.0, 30.0]]),  # trial 1: 2 workers
    }
    b = budget_summary(running_axes(h, 9.0, 3), 2, lambda s: 100.0 - s, 2)
    assert b["full_evaluations"] == [0.2, 0.5, 1.0, 2.0]
    # full evaluations after each row: trial 0 1/9, 2/9, 5/9, 14/9, 14/9 (the idle row); trial 1 1, 10/9, 11/9,
    # 20/9, 29/9 (its last two results finish past the budget and never count)
    assert b["trials_with_incumbent"] == [0, 0, 1, 2]  # trial 0 reaches the top fidelity at row 3
    assert b["cost_mean"] == [(2 + 0) / 2, (5 + 0) / 2, (11 + 20) / 2, (38 + 24) / 2]
    assert b["wallclock_mean"] == [(2 + 0) / 2, (5 + 0) / 2, (11 + 10) / 2, (38 + 12) / 2]
    assert b["mean"][2] == 50.0 and b["mean"][3] == (60.0 + 50.0) / 2  # error = 100 - top-fidelity test score
    assert b["workers"] == 2


def test_old_workdir_histories_load_without_the_multi_fidelity_fields(tmp_path):
    wd = Workdir(str(tmp_path)).open()
    arrays = {k: np.zeros((2, 3), np.float32) for k in HISTORY_FIELDS}
    np.savez(wd.history_path("old"), **arrays)
    assert sorted(wd.load_history("old")) == sorted(HISTORY_FIELDS)
    wd.close()


def test_a_study_refuses_a_multi_fidelity_searcher():
    from nas.host.study import Study

    with pytest.raises(ValueError, match="'hyperband' is a multi-fidelity searcher"):
        Study({"x": [1, 2, 3]}, searcher="hyperband")


def test_tables_and_plot_say_what_they_show():
    """Hand-made histories (budgets 1, 3, 9 epochs; a budget of 2 full evaluations): the tables say whether +-
    is std or s.e., carry the cost unit, and print "no result yet" where no trial has one; the plot sets the
    multi-fidelity searcher apart and labels its axes with units."""
    from nas.experiment import report as rep
    from tests.mf_tables import toy_table

    table = toy_table()
    bench = table.replace(levels=tuple(lvl.replace(cost_unit="s") for lvl in table.levels))
    mf = {
        "score": np.array([[5.0, 6.0, 7.0, 4.0], [5.0, 9.0, 8.0, 1.0]]),
        "report_score": np.array([[50.0, 60.0, 70.0, 40.0], [50.0, 90.0, 80.0, 10.0]]),
        "fidelity": np.array([[0, 0, 1, 2], [0, 0, 0, 0]]),  # trial 1 never reaches the top fidelity
        "resource": np.array([[1.0, 1.0, 3.0, 9.0], [1.0, 1.0, 1.0, 1.0]]),
        "cost": np.array([[2.0, 3.0, 6.0, 27.0], [2.0, 2.0, 2.0, 2.0]]),
        "finish": np.array([[2.0, 3.0, 9.0, 36.0], [2.0, 2.0, 4.0, 4.0]]),
    }
    sf = {"score": np.array([[3.0, 4.0], [5.0, 1.0]]), "report_score": np.array([[30.0, 40.0], [50.0, 10.0]]),
          "cost": np.array([[10.0, 10.0], [10.0, 10.0]])}  # fmt: skip
    options = {"mf": {"name": "asha", "workers": 2}, "rs": {"name": "random_search"}}
    summary, curves = rep.build_summary(bench, {"mf": mf, "rs": sf}, options, 2, 1)
    assert summary["cost_unit"] == "s" and summary["searchers"]["mf"]["multi_fidelity"]
    lines = rep.format_table(summary).splitlines()
    assert lines[0].endswith("against compute, mean +- std over trials: budget 2 full evaluations (9 epochs each)")
    assert lines[1].endswith("| cost at 100 % (s) | wall-clock at 100 % (s) | trials |")
    mf_row = lines[3].split(" | ")
    assert mf_row[2:6] == ["no result yet"] * 3 + ["40 +- 0 (1 of 2 trials)"]  # 10, 25, 50, 100 %
    assert rep.format_table(summary, spread="se").splitlines()[0].endswith("mean +- s.e. over trials: budget 2 "
                                                                            "full evaluations (9 epochs each)")
    rs_row = rep.format_table(summary, spread="se").splitlines()[4]
    # one full evaluation: trials 30 and 50, their sample std 14.1 over sqrt(2); two: 40 and 50
    assert rs_row.startswith("| rs | 1 | no result yet | no result yet | 40 +- 10 | 45 +- 5 | 20 | 20 | 2 |")
    fig = rep.curves_figure(curves, summary, compute=rep.compute_curves(bench, {"mf": mf, "rs": sf}, summary))
    axes = fig.axes
    assert [ax.get_xlabel() for ax in axes] == [
        "compute (full evaluations of 9 epochs)", "cost (summed, s)", "simulated wall-clock (s)"
    ]  # fmt: skip
    legend = [t.get_text() for t in axes[0].get_legend().get_texts()]
    assert legend[:4] == ["multi-fidelity searchers", "mf (n=2)", "single-fidelity searchers", "rs (n=2)"]
    assert [ln.get_linestyle() for ln in axes[0].get_lines()[:2]] == ["-", "--"]
