"""``python -m scripts.results``: every results table of the pages agrees with its ``results/*.json`` file.

The render/check round trip on a temporary page, every mistake's one line, and the files written from a
real run's workdir and from ``scripts.bench.bench_tuner``'s JSON.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.results import importing, pages, render, source
from scripts.results.__main__ import default_pages
from scripts.results.source import ResultsError

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = {
    "title": "Table III: HPO on NAS-Bench-201 and HPOLib",
    "run": {
        "command": "python -m scripts.train --config configs/table3.py",
        "protocol": "mean",
        "seed": 0,
        "trials": 500,
        "machine": "2-core x86-64 CPU",
        "date": "2026-11-20",
        "versions": "constraints-results.txt",
        "source": "transcribed from docs/results.md at 587e4ff",
    },
    "tables": {
        "main": {
            "caption": "150 queries.",
            "spread": "std",
            "columns": ["searcher", "NB201 C10 test error (%)", "paper"],
            "rows": [
                ["random search", {"mean": 8.91, "spread": 0.41, "digits": 2}, "6.32"],
                ["TPE", {"mean": 8.5, "spread": 0.5, "digits": 2, "n": 20}, "-"],
            ],
        },
        "speed": {
            "caption": "",
            "spread": None,
            "columns": ["what", "s"],
            "rows": [["a | b", {"mean": 3, "digits": 1}]],
        },
    },
}
PAGE = "# Results\n\n<!-- results: t3 -->\n<!-- /results -->\n\n```text\n<!-- results: not_a_block -->\n```\n"


def write_results(folder: Path, name: str = "t3", data: dict | None = None) -> None:
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps(EXAMPLE if data is None else data))


@pytest.fixture
def site(tmp_path):
    write_results(tmp_path / "results")
    (tmp_path / "page.md").write_text(PAGE)
    return tmp_path


def test_render_then_check_round_trip(site):
    results = site / "results"
    assert pages.rewrite("page.md", site, results)
    text = (site / "page.md").read_text()
    assert "| random search | 8.91 ± 0.41 | 6.32 |" in text
    assert "| TPE | 8.50 ± 0.50 (n=20) | - |" in text  # n printed where it differs from the run's trials
    assert "150 queries. Protocol: mean; ± is the std over 500 trials (seed 0). Command: `python -m scripts." in text
    assert "Machine: 2-core x86-64 CPU, date 2026-11-20; versions: constraints-results.txt." in text
    assert "<!-- results: not_a_block -->\n```" in text  # a marker in a code block is text
    assert pages.differences("page.md", site, results) == []
    assert not pages.rewrite("page.md", site, results)  # rendering twice: the same bytes
    assert (site / "page.md").read_text() == text


def test_a_table_over_other_runs_states_its_own(site):
    data = copy.deepcopy(EXAMPLE)
    data["tables"]["main"].update(trials=20, seed=list(range(20)))  # the cells are over 20 runs, not the file's 500
    write_results(site / "results", data=data)
    pages.rewrite("page.md", site, site / "results")
    text = (site / "page.md").read_text()
    assert "| TPE | 8.50 ± 0.50 | - |" in text  # n=20 is the table's own count: not printed
    assert "150 queries. Protocol: mean; ± is the std over 20 trials (seeds 0-19)." in text
    assert render.caption_text(data["tables"]["speed"], data["run"]).startswith("Protocol: mean; 500 trials (seed 0).")


def test_check_names_the_differing_cell(site):
    results = site / "results"
    pages.rewrite("page.md", site, results)
    text = (site / "page.md").read_text()
    (site / "page.md").write_text(text.replace("8.91 ± 0.41", "8.90 ± 0.41"))
    line = 1 + text.split("\n").index("| random search | 8.91 ± 0.41 | 6.32 |")
    assert pages.differences("page.md", site, results) == [
        f"page.md:{line}: results t3/main row 1 column 2: page has '8.90 ± 0.41', results/t3.json gives '8.91 ± 0.41'"
    ]
    (site / "page.md").write_text(text.replace("| TPE | 8.50 ± 0.50 (n=20) | - |\n", ""))
    (got,) = pages.differences("page.md", site, results)
    assert "results t3/main row 2: page lacks it, results/t3.json gives '| TPE | 8.50 ± 0.50 (n=20) | - |'" in got
    (site / "page.md").write_text(text.replace("150 queries.", "200 queries."))
    (got,) = pages.differences("page.md", site, results)
    assert "results t3/main caption: page has '200 queries. Protocol" in got
    (site / "page.md").write_text(text.replace("| 6.32 |", "|   6.32 |"))
    (got,) = pages.differences("page.md", site, results)
    assert "laid out by hand (same figures); run python -m scripts.results page.md" in got


def test_a_marker_names_one_table(site):
    (site / "page.md").write_text("<!-- results: t3/speed -->\n<!-- /results -->\n")
    pages.rewrite("page.md", site, site / "results")
    text = (site / "page.md").read_text()
    assert "| a \\| b | 3.0 |" in text  # a | in a cell does not break the row
    assert "Protocol: mean; 500 trials (seed 0)." in text  # no spread: no ±
    assert pages.differences("page.md", site, site / "results") == []
    (site / "page.md").write_text("<!-- results: t3/nope -->\n<!-- /results -->\n")
    with pytest.raises(ResultsError, match="results/t3.json has no table 'nope'; it has: main, speed"):
        pages.rewrite("page.md", site, site / "results")


def broken(change) -> dict:
    data = copy.deepcopy(EXAMPLE)
    change(data)
    return data


BAD_FILES = {
    "missing run field": (lambda d: d["run"].pop("machine"), "run lacks 'machine': every run states command"),
    "mixed spreads": (
        lambda d: d["tables"]["main"].update(spread=["std", "se"]),
        'a table uses ONE of "std", "se" or null',
    ),
    "spread in a null table": (
        lambda d: d["tables"]["speed"]["rows"][0].__setitem__(1, {"mean": 3, "spread": 1, "digits": 1}),
        "table 'speed' row 1 column 2: cell .* has a spread but the table's spread is null",
    ),
    "ragged row": (lambda d: d["tables"]["main"]["rows"][1].pop(), "table 'main' row 2: 2 cells for 3 columns"),
    "no digits": (
        lambda d: d["tables"]["main"]["rows"][0].__setitem__(1, {"mean": 8.91}),
        "give 'digits'",
    ),
    "seed": (lambda d: d["run"].update(seed="zero"), "run 'seed' is 'zero'; write an int or a list of ints"),
    "table trials": (lambda d: d["tables"]["main"].update(trials=0), "table 'main' 'trials' is 0; write the number"),
}


@pytest.mark.parametrize("mistake", list(BAD_FILES))
def test_a_bad_results_file_gets_one_line(site, mistake):
    change, message = BAD_FILES[mistake]
    write_results(site / "results", data=broken(change))
    (site / "page.md").write_text("<!-- results: t3/main -->\n<!-- /results -->\n<!-- results: t3/speed -->\n"
                                  "<!-- /results -->\n")  # fmt: skip
    with pytest.raises(ResultsError, match=message) as e:
        pages.differences("page.md", site, site / "results")
    assert "\n" not in str(e.value) and str(e.value).startswith("page.md:1: results/t3.json")


BAD_PAGES = {
    "unknown results file": ("<!-- results: nope -->\n<!-- /results -->\n", "unknown results file results/nope.json"),
    "unclosed marker": ("x\n<!-- results: t3 -->\n| a |\n", "page.md:2: results marker not closed"),
    "close without open": ("<!-- /results -->\n", "page.md:1: <!-- /results --> without"),
    "bad name": ("<!-- results: Table 3 -->\n<!-- /results -->\n", "page.md:1: cannot read the marker"),
}


@pytest.mark.parametrize("mistake", list(BAD_PAGES))
def test_a_bad_marker_gets_one_line(site, mistake):
    text, message = BAD_PAGES[mistake]
    (site / "page.md").write_text(text)
    with pytest.raises(ResultsError, match=message):
        pages.rewrite("page.md", site, site / "results")


def results_cli(*args, cwd=ROOT):
    cmd = [sys.executable, "-m", "scripts.results", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600)


def test_the_command_line_checks_and_fails_loudly(site):
    r = results_cli("--results-dir", str(site / "results"), "--check", str(site / "page.md"))
    assert r.returncode == 1 and "results t3/main header: page lacks it" in r.stdout, r.stdout + r.stderr
    r = results_cli("--results-dir", str(site / "results"), str(site / "page.md"))
    assert r.returncode == 0 and "rendered" in r.stdout, r.stderr
    r = results_cli("--results-dir", str(site / "results"), "--check", str(site / "page.md"))
    assert r.returncode == 0 and r.stdout == "", r.stdout + r.stderr
    (site / "page.md").write_text("<!-- results: nope -->\n")
    r = results_cli("--results-dir", str(site / "results"), "--check", str(site / "page.md"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and r.stderr.startswith("results error: "), r.stderr


def test_bench_tuner_json_becomes_a_results_file(tmp_path):
    rows = {
        "import jax only": {"first_s": 1.234, "wall_s": 1.5, "cpu_s": 1.1, "rss_mb": 180.4, "load": 2.0},
        "nasjax random search, cold cache": {
            "first_s": 3.1, "step_ms": 0.51, "wall_s": 4.0, "cpu_s": 3.9, "rss_mb": 400.2, "load": 3.5,
            "cache_files": 12,
        },
        "Study.load of a 1000-trial journal": {
            "first_s": 2.0, "replay_s": 0.25, "step_ms": 0.4, "wall_s": 3.0, "cpu_s": 2.9, "rss_mb": 390, "load": 1,
        },
        "nasjax regularized evolution, warm cache": {
            "first_s": 1.5, "step_ms": 0.3, "wall_s": 2.0, "cpu_s": 1.9, "rss_mb": 320.0, "load": 1.0, "cache_files": 7,
        },
        "nasjax regularized evolution, warm cache, one core": {
            "first_s": 1.4, "step_ms": 0.2, "wall_s": 2.0, "cpu_s": 1.9, "rss_mb": 320.0, "load": 1.0,
        },
    }  # fmt: skip
    (tmp_path / "bench.json").write_text(json.dumps({"trials": 200, "replay": 1000, "rows": rows}))
    r = results_cli("import-bench", str(tmp_path / "bench.json"), "--name", "bench", "--results-dir", str(tmp_path))
    assert r.returncode == 0, r.stderr
    data = source.load("bench", tmp_path)
    table = data["tables"]["main"]
    assert table["spread"] is None and data["run"]["trials"] == 1 and data["run"]["protocol"] == "n/a"
    assert [row[0] for row in table["rows"]] == list(rows)
    assert table["rows"][2][1] == "0.25 (replay)" and table["rows"][1][-1] == {"mean": 12, "digits": 0}
    assert "load average up to 3.5" in data["run"]["machine"] and set(data["run"]["versions"]) >= {"jax", "numpy"}
    assert data["run"]["source"] == f"run {data['run']['date']}"
    goals = data["tables"]["goals"]  # the README's short table: the references and the warm processes (not on one core)
    assert goals["columns"] == ["", "first ask s", "ask+tell ms", "peak RSS MB"]
    assert [row[0] for row in goals["rows"]] == ["import jax only", "evolution, warm"]
    assert [c["mean"] for c in goals["rows"][1][1:]] == [1.5, 0.3, 320.0]


@pytest.mark.slow  # runs scripts.train in a new process
def test_a_real_run_becomes_a_results_file(tmp_path):
    wd, command = tmp_path / "run", "python -m scripts.train --config configs/default.py --config.num_trials=2"
    train = [sys.executable, "-m", "scripts.train", "--config", "configs/default.py", "--config.num_trials=2",
             "--config.max_queries=20", "--config.only=random_search,regularized_evolution", "--noprogress",
             f"--workdir={wd}"]  # fmt: skip
    r = subprocess.run(train, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    r = results_cli("import", str(wd), "--name", "tiny", "--results-dir", str(tmp_path))
    assert r.returncode == 2 and "does not record the command" in r.stderr, r.stderr  # asks for --command
    r = results_cli("import", str(wd), "--name", "tiny", "--results-dir", str(tmp_path), "--command", command)
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "tiny.json").read_text()
    data = source.load("tiny", tmp_path)
    summary = json.loads((wd / "summary.json").read_text())
    table = data["tables"]["main"]
    assert table["columns"] == ["searcher", "validation error (%) at 20 queries"]
    for label, cell in table["rows"]:
        s = summary["searchers"][label]
        assert cell["mean"] == pytest.approx(s["mean"][-1], rel=1e-5) and cell["n"] == 2
        assert cell["spread"] == pytest.approx(s["std"][-1], rel=1e-5)  # the population std summary.json holds
    assert [row[0] for row in table["rows"]] == ["random_search", "regularized_evolution"]
    run = data["run"]
    assert run["command"] == command and run["trials"] == 2 and run["seed"] == 0 and run["protocol"] == "mean"
    assert "CPU cores" in run["machine"] and run["source"] == f"run {run['date']}"
    # deterministic: importing again writes the same bytes
    r = results_cli("import", str(wd), "--name", "tiny", "--results-dir", str(tmp_path), "--command", command)
    assert r.returncode == 0 and (tmp_path / "tiny.json").read_text() == text
    (tmp_path / "page.md").write_text("<!-- results: tiny -->\n<!-- /results -->\n")
    assert pages.rewrite("page.md", tmp_path, tmp_path) and pages.differences("page.md", tmp_path, tmp_path) == []
    # --queries: one column per query count the summary reports (the README's default-job table)
    r = results_cli("import", str(wd), "--name", "cols", "--results-dir", str(tmp_path), "--command", command,
                    "--queries", "10,20")  # fmt: skip
    assert r.returncode == 0, r.stderr
    table = source.load("cols", tmp_path)["tables"]["main"]
    assert table["columns"] == ["searcher", "10 queries", "20 queries"]
    for label, first, last in table["rows"]:
        s = summary["searchers"][label]
        assert first["mean"] == pytest.approx(s["mean"][s["queries"].index(10)], rel=1e-5)
        assert last["mean"] == pytest.approx(s["mean"][-1], rel=1e-5)
    r = results_cli("import", str(wd), "--name", "cols", "--results-dir", str(tmp_path), "--command", command,
                    "--queries", "3")  # fmt: skip
    assert r.returncode == 2 and "not at 3" in r.stderr, r.stderr


def test_results_files_dump_one_row_a_line():
    text = importing.dumps(EXAMPLE)
    assert json.loads(text) == EXAMPLE
    assert '      ["TPE", {"mean": 8.5, "spread": 0.5, "digits": 2, "n": 20}, "-"]' in text


def test_every_results_file_is_readable():
    for path in sorted(source.RESULTS_DIR.glob("*.json")):
        source.load(path.stem)


def test_every_page_agrees_with_its_results():
    found = []
    for page in default_pages(ROOT):
        try:
            found += pages.differences(page)
        except ResultsError as e:
            found.append(str(e))
    assert not found, "\n".join(found) + "\nrender the pages with: python -m scripts.results PAGE ..."


def fake_run(folder: Path, searchers: dict, trials: int = 500, mf: tuple = ()) -> Path:
    """A workdir whose summary.json reports ``searchers`` ({key: [(queries, mean, std), ...]})."""
    folder.mkdir(parents=True)
    summary = {"max_queries": 150, "searchers": {}}
    for key, points in searchers.items():
        s = {"num_trials": trials, "queries": [q for q, _, _ in points], "mean": [m for _, m, _ in points],
             "std": [s for _, _, s in points], "multi_fidelity": key in mf}  # fmt: skip
        if key in mf:  # read at the compute of the full budget
            s["budget"] = {"fractions": [0.5, 1.0], "mean": [9.0, points[-1][1]], "std": [1.0, points[-1][2]]}
            s["queries"], s["mean"], s["std"] = [286], [0.0], [0.0]
        summary["searchers"][key] = s
    (folder / "summary.json").write_text(json.dumps(summary))
    return folder


def test_a_rerun_is_verified_cell_by_cell_and_written(tmp_path, capsys):
    from scripts.results import verify

    data = copy.deepcopy(EXAMPLE)
    rows = [["random search", {"mean": 8.91, "spread": 0.41, "digits": 2}, "4.48 ± 1.8"],
            ["AlphaX, c = 0.1", {"mean": 5.7, "spread": 0.2, "digits": 3}, "-"],
            ["TPE", {"mean": 8.5, "spread": 0.5, "digits": 2, "n": 20}, "3.1"]]  # fmt: skip
    columns = ["searcher", "50 queries", "naval (x1e-5)"]
    data["tables"] = {"main": {"caption": "", "spread": "std", "columns": columns, "rows": rows}}
    write_results(tmp_path / "results", data=data)
    c10 = fake_run(tmp_path / "c10", {"random_search": [(50, 8.9149, 0.4149)], "alphax": [(50, 5.7049, 0.2049)],
                                      "tpe": [(50, 8.5, 0.5)]})  # fmt: skip
    naval = fake_run(tmp_path / "naval", {"random_search": [(150, 4.4849e-5, 1.849e-5)], "bohb": [(150, 1, 1)]})
    base = ["t3", "--results-dir", str(tmp_path / "results"), "--workdir", f"50 queries={c10}",
            "--row", "AlphaX, c = 0.1=alphax"]  # fmt: skip
    assert verify.main(base) == 0  # reproduced at the decimals each figure was reported with
    out = capsys.readouterr().out
    assert "row 2 column 2 (AlphaX, c = 0.1 / 50 queries): reported 5.7 ± 0.2, run 5.7049 ± 0.2049: reproduced" in out
    assert f"not compared: row 'TPE' column '50 queries': reported over 20 trials, {c10} has 500" in out
    assert "2 of 2 cells reproduced, 1 not compared" in out
    tpe = fake_run(tmp_path / "tpe", {"tpe": [(50, 8.5, 0.5)]}, trials=20)  # a row from another run of the column
    assert verify.main([*base, "--workdir", f"50 queries={tpe}"]) == 0
    assert "3 of 3 cells reproduced, 0 not compared" in capsys.readouterr().out
    copied = tmp_path / "copy"
    write_results(copied, data=data)
    assert verify.main([*base, "--workdir", f"50 queries={tpe}", "--results-dir", str(copied), "--write", "--command",
                        "python -m scripts.train", "--quoted", "naval (x1e-5)"]) == 0  # fmt: skip
    written = source.load("t3", copied)["run"]["source"]
    assert written == f"run {written[4:14]}: reproduced every cell reported on 2026-11-20"  # naval: quoted figures
    # naval: in the column's units (x1e-5); 4.4849e-5 is 4.48, but its std 1.849e-5 is 1.8, not 1.9
    assert verify.main([*base, "--workdir", f"naval (x1e-5)={naval}:150"]) == 0
    naval = fake_run(tmp_path / "naval2", {"random_search": [(150, 4.52e-5, 1.849e-5)]})
    assert verify.main([*base, "--workdir", f"naval (x1e-5)={naval}"]) == 1
    assert "(random search / naval (x1e-5)): reported 4.48 ± 1.8, run 4.52 ± 1.849: DIFFERS" in capsys.readouterr().out
    with pytest.raises(ResultsError, match="--write needs --command"):
        verify.main([*base, "--workdir", f"naval (x1e-5)={naval}", "--write"])
    command = "python -m scripts.train --config configs/table3.py"
    assert verify.main([*base, "--workdir", f"naval (x1e-5)={naval}", "--write", "--command", command]) == 0
    written = source.load("t3", tmp_path / "results")
    rows = written["tables"]["main"]["rows"]
    assert rows[0] == ["random search", {"mean": 8.91, "spread": 0.41, "digits": 2}, "4.52 ± 1.8"]  # as reported
    assert rows[1][1] == {"mean": 5.7, "spread": 0.2, "digits": 3} and rows[2] == data["tables"]["main"]["rows"][2]
    run = written["run"]
    assert run["command"] == command and set(run["versions"]) == set(verify.VERSIONED)
    assert run["source"] == (f"run {run['date']}: differs from the figure reported on 2026-11-20 in random search / "
                             "naval (x1e-5); the other cells: transcribed from docs/results.md at 587e4ff")  # fmt: skip
    # verified again: the first report's date and the other cells' source stay what they were
    pins = tmp_path / "pins.txt"
    pins.write_text("jax==0.0.1\n")
    with pytest.raises(ResultsError, match="pins jax 0.0.1, the run had"):
        verify.main([*base, "--workdir", f"naval (x1e-5)={naval}", "--write", "--command", command,
                     "--versions-file", str(pins)])  # fmt: skip
    assert verify.main([*base, "--workdir", f"naval (x1e-5)={naval}", "--write", "--command", command,
                        "--versions-file", str(ROOT / "constraints-results.txt")]) == 0  # fmt: skip
    run = source.load("t3", tmp_path / "results")["run"]
    assert run["versions"] == "constraints-results.txt"  # it pins the installed versions
    assert run["source"] == (f"run {run['date']}: reproduced every cell rerun (3: 50 queries, naval (x1e-5); rows "
                             "random search, AlphaX, c = 0.1) reported on 2026-11-20; the other cells: transcribed "
                             "from docs/results.md at 587e4ff")  # fmt: skip


def test_a_multi_fidelity_searcher_is_read_at_the_full_budget(tmp_path, capsys):
    from scripts.results import verify

    data = copy.deepcopy(EXAMPLE)
    data["tables"] = {"main": {"caption": "", "spread": "std", "columns": ["searcher", "c10", "c10 50 %"],
                               "rows": [["BOHB", {"mean": 5.754, "spread": 0.22, "digits": 3},
                                         {"mean": 9.0, "spread": 1.0, "digits": 1}]]}}  # fmt: skip
    write_results(tmp_path / "results", data=data)
    wd = fake_run(tmp_path / "wd", {"bohb": [(150, 5.7544, 0.2204)]}, mf=("bohb",))
    args = ["t3", "--results-dir", str(tmp_path / "results"), "--workdir", f"c10={wd}", "--workdir", f"c10 50 %={wd}"]
    assert verify.main(args) == 0
    assert "2 of 2 cells reproduced" in capsys.readouterr().out  # 50 %: at half the budget's compute


def test_verify_names_a_wrong_column_in_one_line(site):
    r = results_cli("verify", "t3", "--results-dir", str(site / "results"), "--workdir", "NB201=/nowhere")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "--workdir names column 'NB201'; the table's columns are" in r.stderr


def test_a_standard_error_and_a_noted_figure_are_verified(tmp_path, capsys):
    from scripts.results import verify

    data = copy.deepcopy(EXAMPLE)
    data["run"]["trials"] = 100
    data["tables"] = {"main": {"caption": "", "spread": "se", "columns": ["S", "1"],
                               "rows": [["default (`remaade`)", "3.531 ± 0.032 (39 %)"]]}}  # fmt: skip
    write_results(tmp_path / "results", data=data)
    wd = fake_run(tmp_path / "wd", {"remaade": [(150, 3.5312, 0.32)]}, trials=100)  # se 0.032
    args = ["t3", "--results-dir", str(tmp_path / "results"), "--workdir", f"1={wd}:150"]
    assert verify.main(args) == 0
    wd = fake_run(tmp_path / "wd2", {"remaade": [(150, 3.5412, 0.32)]}, trials=100)
    args[-1] = f"1={wd}:150"
    assert verify.main([*args, "--write", "--command", "python -m scripts.train"]) == 0
    rows = source.load("t3", tmp_path / "results")["tables"]["main"]["rows"]
    assert rows == [["default (`remaade`)", "3.541 ± 0.032 (39 %)"]]  # the row names its searcher in backticks
    assert "reported 3.531 ± 0.032, run 3.5412 ± 0.032: DIFFERS" in capsys.readouterr().out


def test_a_hypervolume_gap_is_read_at_its_share_of_the_budget(tmp_path, capsys):
    from scripts.results import verify

    data = copy.deepcopy(EXAMPLE)
    data["run"]["trials"] = 100
    data["tables"] = {"main": {"caption": "", "spread": "se", "columns": ["searcher", "naval 25 %", "naval 100 %"],
                               "rows": [["NSGA-II", {"mean": 31.1, "digits": 1},
                                         {"mean": 7.6, "spread": 0.4, "digits": 1}]]}}  # fmt: skip
    write_results(tmp_path / "results", data=data)
    wd = fake_run(tmp_path / "wd", {"nsga2": [(150, 1.0, 1.0)]}, trials=100)
    summary = json.loads((wd / "summary.json").read_text())
    summary["pareto"] = {"searchers": {"nsga2": {"fractions": [0.25, 0.5, 1.0], "num_trials": 100,
                                                 "gap": {"mean": [31.14, 20.0, 7.58], "se": [1.0, 1.0, 0.41]}}}}
    (wd / "summary.json").write_text(json.dumps(summary))  # fmt: skip
    args = ["t3", "--results-dir", str(tmp_path / "results"), "--row", "NSGA-II=nsga2"]
    assert verify.main([*args, "--workdir", f"naval 25 %={wd}", "--workdir", f"naval 100 %={wd}"]) == 0
    assert "2 of 2 cells reproduced" in capsys.readouterr().out
    data["run"]["date"] = "not recorded"
    write_results(tmp_path / "results", data=data)
    assert verify.main([*args, "--workdir", f"naval 25 %={wd}", "--workdir", f"naval 100 %={wd}", "--write",
                        "--command", "python -m scripts.train"]) == 0  # fmt: skip
    written = source.load("t3", tmp_path / "results")["run"]["source"]
    assert written.endswith(": reproduced every cell reported before (date not recorded)"), written
