"""What ``Study.optimize`` shows while it runs (nas/host/progress.py): one redrawn line on a terminal, a plain
line per finished trial in a log, nothing with ``show_progress=False`` or a ``nas.host`` level above INFO."""

import io
import logging
import re
import sys

import jax
import pytest

from nas.host import progress
from nas.host.study import Study

SPACE = {"lr": [0.1, 0.03, 0.01, 0.003], "depth": [1, 2, 3]}


class Terminal(io.StringIO):
    def isatty(self):
        return True


def objective(p):
    if p["depth"] == 3:
        raise ZeroDivisionError("depth 3")
    return p["lr"] * p["depth"]


def shown(text: str) -> list[str]:
    """The lines a terminal shows: each ``\\r`` starts its line again, ``ESC[K`` clears the rest of it."""
    lines = []
    for raw in text.replace("\x1b[K", "").split("\n"):
        lines.append(raw.split("\r")[-1])
    return [x for x in lines if x]


def study(seed=0, space=SPACE):
    return Study(space, "random_search", direction="minimize", seed=seed, max_queries=6, batch_size=2)


def test_a_terminal_sees_one_redrawn_line_with_counts_best_and_time_and_a_line_per_compile(monkeypatch):
    term = Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    s = study(space={"lr": [0.1, 0.03, 0.01, 0.003, 0.001], "depth": [1, 2, 3]})  # a shape of its own: it compiles
    s.optimize(objective, catch=ZeroDivisionError)
    text = term.getvalue()
    assert "\r" in text and text.endswith("\n")
    lines = shown(text)
    done = sum(t.state == "complete" for t in s.trials)
    failed = sum(t.state == "failed" for t in s.trials)
    best = s.best_trial
    final = f"trials: {done} done, 0 running, 0 pruned, {failed} failed | best {best.value:.6g} (trial {best.number})"
    assert lines[-1].startswith(final + " | 0:"), lines
    compiles = [x for x in lines if x.startswith("compiling ")]  # lines of their own, as compile_notice's
    assert compiles and all(re.fullmatch(r"compiling random_search (ask|tell) \.\.\. \d+\.\d s \(.+\)", x)
                            for x in compiles), compiles  # fmt: skip
    assert compiles[0].startswith("compiling random_search ask")
    assert sum(x.startswith("trials: ") for x in lines) == 1  # the rest was drawn over


def test_the_line_says_what_is_compiling_while_jax_compiles_in_the_loop():
    s = study()
    p = progress.Progress(s, Terminal(), terminal=True, log=False)
    p.t0 = 0.0
    with p.searcher_call("ask"):
        assert "compiling" not in p.line()
        jax.monitoring.record_event_duration_secs("/jax/core/compile/jaxpr_trace_duration", 0.01)
        assert re.search(r"\| compiling random_search ask \.\.\. \d+ s \|", p.line()), p.line()
    assert "compiling" not in p.line()
    assert progress.clock(14.7) == "0:14" and progress.clock(723) == "12:03" and progress.clock(3723) == "1:02:03"


def test_a_log_gets_a_plain_line_per_finished_trial():
    plain = io.StringIO()
    s = study()
    p = progress.make_progress(s, True, stream=plain)
    from nas.host.optimize import run_optimize
    from nas.host.workers import make_workers

    run_optimize(s, objective, 6, make_workers(), (ZeroDivisionError,), 0, progress=p)
    lines = [x for x in plain.getvalue().splitlines() if x.startswith("trial ")]
    assert "\r" not in plain.getvalue() and len(lines) == 6
    for t, line in zip(s.trials, lines, strict=True):
        assert line.startswith(f"trial {t.number} {t.state}"), line
        assert f"params {t.params!r}" in line
    assert "(ZeroDivisionError: depth 3): no value" in plain.getvalue()
    assert lines[-1].endswith(f"best is trial {s.best_trial.number} with {s.best_value:.6g}")


def test_logging_decides_by_default_and_show_progress_false_prints_nothing(monkeypatch, caplog, capsys):
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # not a terminal: records on the nas.host logger
    with caplog.at_level(logging.INFO, logger="nas.host"):
        s = study(seed=3)
        s.optimize(objective, catch=(ZeroDivisionError,))
    records = [r.getMessage() for r in caplog.records if r.name == "nas.host" and r.getMessage().startswith("trial ")]
    assert len(records) == 6 and records[0].startswith("trial 0 ")
    assert sys.stderr.getvalue() == ""  # through logging only
    caplog.clear()
    study(seed=4).optimize(objective, catch=ZeroDivisionError)  # the root's WARNING: nothing is formatted or shown
    assert not [r for r in caplog.records if r.name == "nas.host"] and sys.stderr.getvalue() == ""
    term = Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    study(seed=5).optimize(objective, catch=ZeroDivisionError, show_progress=False)
    assert term.getvalue() == ""
    logging.getLogger("nas.host").setLevel(logging.WARNING)  # Optuna's set_verbosity(WARNING)
    try:
        study(seed=6).optimize(objective, catch=ZeroDivisionError)
        assert term.getvalue() == ""
        study(seed=7).optimize(objective, catch=ZeroDivisionError, show_progress=True)  # asked for: shown
        assert shown(term.getvalue())[-1].startswith("trials: ")
    finally:
        logging.getLogger("nas.host").setLevel(logging.NOTSET)
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""


@pytest.mark.parametrize("bad", [1, "yes"])
def test_show_progress_is_a_bool_or_none(bad):
    with pytest.raises(TypeError, match="show_progress must be True, False or None"):
        study().optimize(objective, show_progress=bad)


def test_a_multi_fidelity_study_shows_budgets_and_its_best_at_the_top_fidelity():
    from tests.mf_tables import BUDGETS
    from tests.mf_tables import SPACE as MF_SPACE

    plain = io.StringIO()
    s = Study(MF_SPACE, "asha", direction="maximize", seed=0, max_queries=2, fidelities=BUDGETS)
    p = progress.make_progress(s, True, stream=plain)
    from nas.host.optimize import run_optimize
    from nas.host.workers import make_workers

    run_optimize(s, lambda t: float(sum(t.tokens)) + t.budget / 10, None, make_workers(), (), 0, progress=p)
    lines = [x for x in plain.getvalue().splitlines() if x.startswith("trial ")]
    assert len(lines) == len(s.trials) and all(f" at budget {t.budget:g}: " in x for t, x in zip(s.trials, lines))
    top = [t.number for t in s.trials if t.fidelity == len(BUDGETS) - 1]
    first_best = lines[top[0]].split("; best is ")
    assert all("best is" not in x for x in lines[: top[0]])  # nothing completed at the top fidelity before
    assert first_best[1].startswith(f"trial {top[0]} ") and lines[-1].endswith(
        f"best is trial {s.best_trial.number} with {s.best_value:.6g}"
    )


def test_the_line_counts_a_trial_running_inline_while_it_runs(monkeypatch):
    import time

    term = Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    monkeypatch.setattr(progress, "TICK_S", 0.05)
    s = study(seed=8)
    s.optimize(lambda p: p["lr"], n_trials=2)  # compiled: the next trials only run
    term.seek(0)
    term.truncate()
    s.optimize(lambda p: time.sleep(0.3) or p["lr"], n_trials=1)
    assert "trials: 2 done, 1 running, 0 pruned, 0 failed | best " in term.getvalue()
