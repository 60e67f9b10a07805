"""The one-line promise of docs/reference/errors.md, class by class: every command in ``scripts/`` runs under the
project's handler (``nas.experiment.cli``), whose classes each print one line and exit 2 (a path the
system refuses included, a bug keeps its traceback); output paths are checked before any work; a loader's
refusal of an option, an optional package that is absent, a float option that is not a number and a run
state too large for memory each name what to change; defaults that cannot run on a small budget are
fitted to it in Python, while options given are never changed."""

import dataclasses
import glob
import math
import os
import subprocess
import sys
import typing

import pytest
from absl import app

from nas.engine.budget import Budget, BudgetError, check_budget
from nas.experiment import cli, peers
from nas.experiment.config import ConfigError, build_benchmark
from nas.host.study import Study
from nas.searchers import available_searchers, make_options, searcher_class
from spaces.benchmarks.data_files import data_dir
from spaces.benchmarks.registry import make_benchmark
from spaces.files import DataError, MissingPackageError
from spaces.nb201 import SPACE as NB201

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def raising(error):
    def main(argv):
        raise error

    return cli.guarded(main)


@pytest.mark.parametrize(
    "error, line",
    [
        (ConfigError("config.x must be >= 1"), "config error: config.x must be >= 1"),
        (DataError("f.csv: cut short; give a whole file"), "data error: f.csv: cut short; give a whole file"),
        (MissingPackageError("needs Optuna: pip install optuna"), "missing package: needs Optuna: pip install optuna"),
        (app.UsageError("unexpected arguments ['x']"), "usage error: unexpected arguments ['x']"),
        (PermissionError(13, "Permission denied", "/etc/x"), "file error: /etc/x: Permission denied; give a path"),
        (IsADirectoryError(21, "Is a directory", "/tmp"), "file error: /tmp: Is a directory; give a path"),
    ],
    ids=["config", "data", "package", "usage", "permission", "folder"],
)
def test_each_error_class_is_one_line_and_exit_2(error, line, capsys):
    assert raising(error)([]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith(line), err


def test_a_bad_compile_threads_setting_is_one_config_line(monkeypatch, capsys):
    from nas.engine.program_cache import THREADS_ENV, compile_threads

    for bad in ("two", "0"):
        monkeypatch.setenv(THREADS_ENV, bad)
        assert cli.guarded(lambda argv: compile_threads(3))([]) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and err.startswith(f"config error: ${THREADS_ENV}='{bad}'"), err


def test_a_bug_keeps_its_traceback():
    for bug in (KeyError("x"), OSError(5, "I/O error"), FileNotFoundError(2, "No such file", "/x")):
        with pytest.raises(type(bug)):  # ENOENT from code is a bug, not a refused path
            raising(bug)([])


def test_every_command_runs_under_the_one_line_handler():
    """A script run with absl's own ``app.run`` would print tracebacks for flag and config mistakes. A command
    without absl flags and JAX (``python -m scripts.results``, whose pages render without importing JAX) parses
    with argparse (its usage errors: one line and exit 2) and prints its own errors as one line
    (tests/test_results_pages.py)."""
    offenders = []
    for path in glob.glob(os.path.join(ROOT, "scripts", "**", "*.py"), recursive=True):
        source = open(path, encoding="utf-8").read()
        argparse_only = "import argparse" in source and "absl" not in source
        if '__name__ == "__main__"' in source and not argparse_only and (
            "cli.run(main)" not in source or "app.run(" in source
        ):
            offenders.append(os.path.relpath(path, ROOT))
    assert not offenders, offenders


def test_output_paths_are_checked_before_any_work(tmp_path):
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    with pytest.raises(ConfigError, match=r"--out=.* is a folder; give the path of the file to write, e\.g\. .*c\.npz"):
        cli.output_file(str(tmp_path), "out", "c.npz")
    with pytest.raises(ConfigError, match=r"file\.txt is a file, not a folder"):
        cli.output_file(str(a_file / "sub" / "c.npz"), "out")
    if os.path.isdir("/proc"):  # a folder nobody writes in, root included (os.access would say yes to root)
        with pytest.raises(ConfigError, match=r"--out=/proc/c\.npz: cannot write in /proc"):
            cli.output_file("/proc/c.npz", "out")
    assert cli.output_file(str(tmp_path / "new" / "c.npz"), "out") == str(tmp_path / "new" / "c.npz")


def test_a_folder_the_command_writes_in_is_checked(tmp_path):
    (tmp_path / "f").write_text("x")
    assert cli.output_folder("", "compilation_cache") == ""  # off
    with pytest.raises(ConfigError, match=r"--compilation_cache=.*/f is a file, not a folder; give a folder, or"):
        cli.output_folder(str(tmp_path / "f"), "compilation_cache", ", or '' (no cache)")
    if os.path.isdir("/proc"):
        with pytest.raises(ConfigError, match=r"--compilation_cache=/proc/x: cannot write in it"):
            cli.output_folder("/proc/x", "compilation_cache")
    assert cli.output_folder(str(tmp_path / "new"), "x") == str(tmp_path / "new") and (tmp_path / "new").is_dir()


def test_data_paths_say_when_a_folder_stands_where_a_file_belongs(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(DataError, match=r"is a folder, not a file; give the test CSV file"):
        make_benchmark("nb201/cifar10", test_csv=str(tmp_path))
    with pytest.raises(DataError, match=r"/f is a file, not a folder; give the folder with data\.txt"):
        make_benchmark("mlp/boston", data_path=str(tmp_path / "f"))


def test_the_data_directory_must_be_a_folder(monkeypatch, tmp_path):
    (tmp_path / "f").write_text("x")
    monkeypatch.setenv("NASJAX_DATA", str(tmp_path / "f"))
    with pytest.raises(DataError, match=r"\$NASJAX_DATA=.*/f is a file, not a folder; point \$NASJAX_DATA at"):
        data_dir()


@pytest.mark.parametrize(
    "options, message",
    [
        ({"split": -1}, r"'mlp/diabetes' with options \{'split': -1\}: split must be >= 0"),
        ({"fidelities": (0, 100)}, r"fidelities must be finite, positive and increasing, got \(0.0, 100.0\)"),
        ({"fidelities": (800, 50)}, r"fidelities must be finite, positive and increasing, got \(800.0, 50.0\)"),
        ({"fidelities": 200}, r"fidelities must be a list of increasing budgets, e\.g\. \(12, 200\), got 200"),
        ({"valid_fraction": 1.5}, r"'mlp/diabetes' with options"),
    ],
    ids=["split", "zero_budget", "decreasing", "not_a_list", "valid_fraction"],
)
def test_a_loader_refusing_an_option_is_a_config_error(options, message):
    config = {"benchmark": "mlp/diabetes", "protocol": "mean", "benchmark_options": options}
    with pytest.raises(ConfigError, match=message) as e:
        build_benchmark(config)
    assert "\n" not in str(e.value)


def float_options() -> list[tuple[str, str, object]]:
    """(name, option, the options factory): a searcher and a peer may share a name (``tpe``)."""
    out = []
    for name in available_searchers(multi_fidelity=None):
        cls = searcher_class(name).Options
        hints = typing.get_type_hints(cls)
        out += [(name, f.name, make_options) for f in dataclasses.fields(cls) if hints[f.name] is float]
    for name, peer in peers.PEERS.items():
        cls = peer.Options
        hints = typing.get_type_hints(cls)
        out += [(name, f.name, peers.make_peer_options) for f in dataclasses.fields(cls) if hints[f.name] is float]
    return out


def test_no_float_option_takes_nan_or_infinity():
    """Every float option of every searcher and peer (none gives NaN or inf a meaning), not a list of patches."""
    cases = float_options()
    named = {(name, option) for name, option, _ in cases}
    assert ("asha", "eta") in named and ("nasbot", "gp_learning_rate") in named and ("syne_tune", "eta") in named
    for name, option, factory in cases:
        for bad in (math.nan, math.inf, -math.inf):
            with pytest.raises(ValueError, match=f"option {option} must be a finite number, got {bad}"):
                factory(name, **{option: bad})


def test_the_memory_error_names_the_option_that_sizes_a_trial():
    options = make_options("asha", fidelities=(12.0, 200.0), workers=99_999_999_999, max_queries=10)
    searcher = searcher_class("asha")(NB201, options)
    names = {"num_trials": "config.num_trials", "max_queries": "config.max_queries"}
    budget = Budget(max_queries=10, num_trials=2, names=names, option_prefix="config.searchers.asha.")
    with pytest.raises(BudgetError, match=r"TiB of memory .*; lower config\.searchers\.asha\.workers \(it sizes"):
        check_budget(budget, NB201, searcher)
    plain = searcher_class("random_search")(NB201, make_options("random_search", max_queries=10))
    with pytest.raises(BudgetError, match=r"lower config\.num_trials \(or config\.max_queries\)$"):
        check_budget(dataclasses.replace(budget, num_trials=10**12), None, plain)


def test_defaults_that_cannot_run_on_a_small_budget_are_fitted_given_options_are_not():
    assert make_options("remaade", max_queries=29).batch_size == 29  # default 30
    assert make_options("remaade", max_queries=150).batch_size == 30  # a default that fits is kept
    bananas = make_options("bananas", max_queries=40, batch_size=8)
    assert (bananas.batch_size, bananas.num_init) == (8, 8)  # default num_init 10: whole batches
    small = make_options("bananas", max_queries=10)
    assert (small.batch_size, small.num_init) == (5, 5)  # one random batch, then one model batch
    assert make_options("tnas", max_queries=4).num_init == 3
    with pytest.raises(ValueError, match=r"num_init \(10\) must be a multiple of batch_size \(8\)"):
        make_options("bananas", max_queries=40, batch_size=8, num_init=10)  # given: never changed
    with pytest.raises(BudgetError, match=r"batch_size=30 must be in \[1, max_queries=29\]"):
        Study({"a": list(range(40))}, searcher="remaade", max_queries=29, batch_size=30)


def test_a_missing_optional_package_is_one_line(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "syne_tune", None)  # import syne_tune raises ImportError
    with pytest.raises(MissingPackageError, match=r"needs Syne Tune.*pip install --no-deps syne-tune"):
        peers.syne_tune_peer.import_syne_tune()
    assert raising(MissingPackageError("x: pip install y"))([]) == 2


@pytest.mark.slow  # new processes: the converters' wiring to the handler
def test_the_converters_answer_mistakes_in_one_line(tmp_path):
    (tmp_path / "f.csv").write_text("x")
    a_file = {"NASJAX_DATA": str(tmp_path / "f.csv")}
    cases = [
        (["scripts.convert_nb101", f"--tfrecord={tmp_path}"], {}, "data error: ", "not a file; give the NAS-Bench-101"),
        (["scripts.convert_nb201", f"--archive={tmp_path}", f"--out={tmp_path}"], {}, "config error: ", "is a folder"),
        (["scripts.convert_nb201", f"--archive={tmp_path}"], a_file, "data error: ", "$NASJAX_DATA="),
    ]
    for args, env, kind, words in cases:
        done = subprocess.run([sys.executable, "-m", *args], cwd=ROOT, env={**os.environ, **env}, capture_output=True,
                              text=True, timeout=300)  # fmt: skip
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith(kind) and words in lines[0], done.stderr
