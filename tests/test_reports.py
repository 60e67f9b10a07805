"""Every string the reports write says what it shows: summary.json, results.csv, the table, metrics.jsonl,
the plot's labels and title (checked on synthetic histories; one tiny run for metrics.jsonl)."""

import json

import numpy as np
from flax import struct

from configs import default
from nas.engine.chunked_loop import incumbent_stats
from nas.engine.devices import seed_mesh_size
from nas.experiment import report as rep
from nas.experiment.run import run_experiment
from spaces.benchmarks.objective import Objective

T, Q = 4, 30


@struct.dataclass
class Table(Objective):
    """Stands in for a benchmark in the reports: its name, split, protocol, metric and best entry."""

    name: str = struct.field(pytree_node=False, default="toy/table")
    has_test: bool = struct.field(pytree_node=False, default=True)
    protocol: str = struct.field(pytree_node=False, default="mean")
    report_kind: str = struct.field(pytree_node=False, default="acc_pct")

    def best_valid(self):
        return {"best_valid": 92.0, "test_of_best_valid": 94.0}


def histories():
    """Validation scores that improve; the first queries are poor (errors near 90 %)."""
    rng = np.random.default_rng(0)
    score = np.minimum.accumulate(-rng.uniform(0, 1, (T, Q)), axis=1) * -1.0  # noisy, improving
    score = 10.0 + 80.0 * score
    score[:, :2] = 10.0  # the first two queries: test error 89 %
    return {"a": {"score": score, "report_score": score + 1.0, "cost": np.ones_like(score)}}


def summary_of(bench):
    return rep.build_summary(bench, histories(), {"a": {"name": "random_search"}}, Q, 10)


def test_summary_csv_and_table_name_the_split_metric_and_protocol(tmp_path):
    summary, _ = summary_of(Table())
    assert list(summary) == ["benchmark", "protocol", "metric", "split", "note", "max_queries",
                             "table_best_valid_reported", "fidelities", "fidelity_unit", "cost_unit", "cost_note",
                             "searchers"]  # fmt: skip
    assert (summary["metric"], summary["split"]) == ("test error (%)", "test")
    assert summary["note"] == "reported: test score of the incumbent (best validation so far)"
    assert summary["table_best_valid_reported"] == 6.0  # test error of the best-validation entry
    assert list(summary["searchers"]["a"]) == ["options", "num_trials", "queries", "mean", "std", "median", "q25",
                                               "q75", "cost_mean", "wallclock_mean", "budget",
                                               "multi_fidelity"]  # fmt: skip
    val, _ = summary_of(Table(has_test=False))
    assert (val["metric"], val["split"]) == ("validation error (%)", "validation")
    assert "VALIDATION" in val["note"] and val["table_best_valid_reported"] == 8.0
    rep.write_csv(str(tmp_path / "r.csv"), summary)
    head = (tmp_path / "r.csv").read_text().splitlines()[0]
    assert head == (
        "searcher,queries,mean,std,median,q25,q75,num_trials,metric,protocol,budget_fraction,cost_mean,wallclock_mean"
    )
    table = rep.format_table(summary).splitlines()
    assert table[0] == "test error (%) of the incumbent (toy/table), mean +- std over trials"
    assert table[1] == "| searcher | 10 queries | 20 queries | 30 queries | trials | protocol |"


def test_plot_labels_title_reference_line_and_y_range():
    summary, curves = summary_of(Table())
    ax = rep.curves_figure(curves, summary).axes[0]
    chosen = "(the configuration with the best validation score so far)"
    assert ax.get_ylabel() == f"test error (%) of the incumbent\n{chosen}"
    assert ax.get_xlabel() == "queries"
    assert ax.get_title() == "toy/table (mean protocol): median over trials, 25-75% band"
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["a (n=4)", "best-validation configuration of the table: 6"]
    lo, hi = ax.get_ylim()
    assert hi < 60.0  # the first queries (error 89 %) do not stretch the axis ...
    assert lo < 6.0 < hi and hi >= np.quantile(curves["a"][:, Q // 10], 0.75)  # ... the rest and the optimum fit
    # an objective without protocol or known optimum (a training task): no "(- protocol)", no line
    bare, curves = summary_of(Table(protocol="-", has_test=False, report_kind="neg_rmse"))
    bare["table_best_valid_reported"] = None
    ax = rep.curves_figure(curves, bare).axes[0]
    assert ax.get_title() == "toy/table: median over trials, 25-75% band"
    assert ax.get_ylabel().startswith("validation RMSE of the incumbent\n")
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["a (n=4)"]


def test_metrics_lines_name_the_split_they_hold(tmp_path):
    score = np.asarray([[1.0, 3.0, 2.0]])
    report = np.asarray([[10.0, 30.0, 20.0]])
    assert incumbent_stats(score, report, 3) == {"best_valid_mean": 3.0, "incumbent_test_mean": 30.0}
    no_test = incumbent_stats(score, report, 2, report=lambda s: 100 - s, has_test=False)
    assert no_test == {"best_valid_mean": 3.0, "incumbent_validation_mean": 30.0, "incumbent_reported_mean": 70.0}
    config = default.get_config()  # no test data: the line holds validation values and says so
    config.num_trials, config.max_queries, config.report_every, config.chunk_steps = 2, 4, 2, 2
    config.only = "random_search"
    run_experiment(config, str(tmp_path / "wd"), progress=False)
    lines = [json.loads(x) for x in (tmp_path / "wd" / "metrics.jsonl").read_text().splitlines()]
    assert [x["step"] for x in lines] == [2, 4]
    assert set(lines[0]) == {"searcher", "time", "chunk", "num_chunks", "step", "queries", "elapsed_s", "devices",
                             "metrics", "best_valid_mean", "incumbent_validation_mean",
                             "incumbent_reported_mean"}  # fmt: skip
    assert lines[0]["devices"] == seed_mesh_size(config.num_trials)  # the split the rounding depends on
    assert lines[-1]["incumbent_reported_mean"] == 100.0 - lines[-1]["incumbent_validation_mean"]
