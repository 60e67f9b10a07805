"""optuna-dashboard over a Study mirrored live into SQLite (nas.adapters.optuna_mirror): its JSON API, and
the page in headless Chromium (Debian's ``chromium`` and ``chromium-driver``; ``.ci/run`` installs them).

The dashboard (``nas.adapters.optuna_dashboard.Dashboard``: ``optuna-dashboard URL --host 127.0.0.1 --port
PORT``) runs as a subprocess at a free port, is waited for a bounded time and is always killed. Where
Chromium, its driver or selenium is missing, the browser test skips and says which.
"""

import os
import shutil
import time

import pytest

optuna = pytest.importorskip("optuna")
pytest.importorskip("optuna_dashboard", reason="optuna-dashboard is not installed: pip install optuna-dashboard")

from nas.adapters.optuna_dashboard import Dashboard, chromium, screenshot  # noqa: E402
from nas.adapters.optuna_mirror import OptunaMirror  # noqa: E402
from nas.host.study import Study  # noqa: E402
from tests.test_optuna_mirror import SPACE, objective  # noqa: E402  (the same training as the mirror's tests)

STATE_NAMES = {"complete": "Complete", "pruned": "Pruned", "failed": "Fail", "pending": "Running"}
WAIT_S = 90  # the dashboard's start, bounded (a loaded 2-core machine takes a few seconds)


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """A mirrored study, part run, with optuna-dashboard reading its SQLite storage."""
    folder = tmp_path_factory.mktemp("dashboard")
    url = f"sqlite:///{folder / 'optuna.db'}"
    study = Study(SPACE, "random_search", direction="minimize", seed=3, max_queries=20, pruner="asha",
                  fidelities=[1, 3, 9], storage=OptunaMirror(str(folder / "study.jsonl"), url))  # fmt: skip
    study.optimize(objective, n_trials=6)
    board = Dashboard(url, wait_s=WAIT_S, log=str(folder / "dashboard.log"))  # optuna-dashboard URL --host --port
    try:
        yield study, board
    finally:
        board.close()
        study.close()
    assert board._proc.poll() is not None  # the subprocess is gone


def study_detail(board, trials: int | None = None, running: int = 0) -> dict:
    """The study as the dashboard's API shows it, once it shows ``trials`` trials (``running`` of them running):
    the dashboard keeps its list of trials for 2 s, so it is asked again, for at most 30 s."""
    (summary,) = board.api("/api/studies")["study_summaries"]
    assert summary["study_name"] == "study" and summary["directions"] == ["minimize"]
    deadline = time.monotonic() + 30
    while True:
        detail = board.api(f"/api/studies/{summary['study_id']}")
        shown = detail["trials"]
        if trials is None or (len(shown) == trials and sum(t["state"] == "Running" for t in shown) == running):
            return detail
        assert time.monotonic() < deadline, f"the dashboard shows {len(shown)} trials, not {trials}"
        time.sleep(0.5)


def counts(states) -> dict:
    out = {}
    for s in states:
        out[s] = out.get(s, 0) + 1
    return out


def test_the_dashboards_api_shows_the_study_while_it_runs(live):
    study, board = live
    assert board.url.startswith("http://127.0.0.1:")
    detail = study_detail(board, 6)
    assert counts(t["state"] for t in detail["trials"]) == counts(STATE_NAMES[t.state] for t in study.trials)
    running = study.ask()  # a trial in training: the dashboard shows it running
    assert study_detail(board, 7, running=1)["trials"][-1]["number"] == running.number
    study.optimize(objective, n_trials=3)  # the pending one first, then new ones: seen by the dashboard as they end
    assert running.state != "pending" and len(study.trials) == 9
    detail = study_detail(board, 9)
    assert counts(t["state"] for t in detail["trials"]) == counts(STATE_NAMES[t.state] for t in study.trials)
    assert {"Complete", "Pruned", "Fail"} <= {t["state"] for t in detail["trials"]}
    for t, shown in zip(study.trials, sorted(detail["trials"], key=lambda d: d["number"])):
        assert shown["number"] == t.number
        assert [(v["step"], v["value"]) for v in shown["intermediate_values"]] == \
            sorted((int(s), v) for s, v in t.intermediate_values.items())  # fmt: skip
        attrs = {a["key"]: a["value"] for a in shown["user_attrs"]}
        assert attrs["nasjax_number"] == str(t.number) and attrs["searcher"] == "random_search"
        assert {p["name"]: p["param_external_value"] for p in shown["params"]} == \
            {k: str(v) for k, v in t.params.items()}  # fmt: skip
    assert detail["has_intermediate_values"] is True
    assert [b["number"] for b in detail["best_trials"]] == [study.best_trial.number]


def chromium_driver():
    """A headless Chromium under selenium, or the reason there is none."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        return None, "selenium is not installed: pip install selenium"
    browser = chromium()
    driver = shutil.which("chromedriver")
    if browser is None or driver is None:
        return None, "Chromium or its driver is absent: apt-get install -y chromium chromium-driver"
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1400,1000"):  # fmt: skip
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(driver), options=options), None


def test_the_dashboard_page_lists_the_trials_in_headless_chromium(live, tmp_path):
    study, board = live
    browser, reason = chromium_driver()
    if browser is None:
        pytest.skip(reason)
    try:
        from selenium.webdriver.support.ui import WebDriverWait

        study_id = board.api("/api/studies")["study_summaries"][0]["study_id"]
        browser.set_page_load_timeout(60)
        browser.get(f"{board.url}/dashboard/studies/{study_id}/trials")
        want = [f"Trial {t.number}" for t in study.trials]

        def shown(driver):
            text = driver.find_element("tag name", "body").text
            return text if all(w in text.split("\n") for w in want) else False

        text = WebDriverWait(browser, 60, poll_frequency=0.5).until(shown)
        assert f"{len(study.trials)} Trials" in text
        for state in {STATE_NAMES[t.state] for t in study.trials}:
            assert state in text.split("\n")
        assert "nasjax_number" in text  # the selected trial's user attrs
        browser.save_screenshot(str(tmp_path / "dashboard.png"))
        assert os.path.getsize(tmp_path / "dashboard.png") > 10_000
    finally:
        browser.quit()
    screenshot(f"{board.url}/dashboard/studies/{study_id}", str(tmp_path / "history.png"))  # Chromium's own
    assert os.path.getsize(tmp_path / "history.png") > 10_000
