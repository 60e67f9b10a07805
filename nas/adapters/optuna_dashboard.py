"""optuna-dashboard over a mirrored study (``nas.adapters.optuna_mirror``), started from Python.

From a shell, ``optuna-dashboard sqlite:///optuna.db`` is all it takes (``pip install optuna-dashboard``).
From a script or a notebook, ``Dashboard`` starts the same command as a subprocess on a free port of
127.0.0.1, waits (a bounded time) until its JSON API answers, and stops it when closed::

    with Dashboard("sqlite:///optuna.db") as board:
        print(board.url)                       # open it in a browser
        board.api("/api/studies")              # the JSON the page reads
        study.optimize(objective)              # the page follows the study live

``screenshot(url, path)`` saves what a headless Chromium shows at ``url`` as a PNG (Debian's
``chromium``; docs/tutorials/integrations.md shows one).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

from spaces.files import MissingPackageError

HOST = "127.0.0.1"  # the dashboard serves this machine only


def dashboard_command() -> str:
    """The ``optuna-dashboard`` executable (beside this Python's, or on the PATH)."""
    if importlib.util.find_spec("optuna_dashboard") is None:
        raise MissingPackageError("optuna-dashboard is not installed: pip install optuna-dashboard")
    beside = os.path.join(os.path.dirname(sys.executable), "optuna-dashboard")
    exe = beside if os.access(beside, os.X_OK) else shutil.which("optuna-dashboard")
    if exe is None:
        raise MissingPackageError("the optuna-dashboard command is not on the PATH: pip install optuna-dashboard")
    return exe


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


class Dashboard:
    """``optuna-dashboard storage --host 127.0.0.1 --port port`` as a subprocess (module doc). ``storage``: an
    Optuna storage URL (``sqlite:///optuna.db``) or an Optuna journal file; ``port``: a free one by default;
    ``wait_s``: how long it may take to answer; ``log``: a file for its output (default: discarded)."""

    def __init__(self, storage: str, port: int | None = None, wait_s: float = 90.0, log: str | None = None):
        self.port = free_port() if port is None else int(port)
        self.url = f"http://{HOST}:{self.port}"
        self._log = open(log, "w") if log else subprocess.DEVNULL  # noqa: SIM115 - closed with the dashboard
        self._proc = subprocess.Popen([dashboard_command(), os.fspath(storage), "--host", HOST, "--port",
                                       str(self.port)], stdout=self._log, stderr=subprocess.STDOUT)  # fmt: skip
        try:
            self._wait(wait_s, log)
        except BaseException:
            self.close()
            raise

    def _wait(self, wait_s: float, log: str | None) -> None:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                self.api("/api/meta")
                return
            except (urllib.error.URLError, ConnectionError, OSError):
                if self._proc.poll() is not None or time.monotonic() > deadline:
                    said = open(log).read()[-1000:] if log else "(give log= to keep its output)"
                    raise RuntimeError(f"optuna-dashboard did not answer at {self.url} within {wait_s:g} s "
                                       f"(exit code {self._proc.poll()}): {said}") from None  # fmt: skip
                time.sleep(0.5)

    def api(self, path: str):
        """The JSON at ``path`` of the dashboard's API (``/api/studies``, ``/api/studies/<id>``)."""
        with urllib.request.urlopen(self.url + path, timeout=10) as r:  # noqa: S310 - 127.0.0.1 only
            return json.loads(r.read())

    def close(self) -> None:
        """Stops the dashboard (terminated, killed after 10 s)."""
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(10)
        if self._log is not subprocess.DEVNULL:
            self._log.close()

    def __enter__(self) -> Dashboard:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def chromium() -> str | None:
    """Debian's Chromium (``apt-get install chromium``), or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def screenshot(url: str, path: str, size=(1280, 860), render_ms: int = 15000) -> None:
    """What a headless Chromium shows at ``url`` after ``render_ms`` of page time, as a PNG at ``path``."""
    browser = chromium()
    if browser is None:
        raise MissingPackageError("a screenshot needs Chromium: apt-get install chromium")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--window-size={size[0]},{size[1]}", f"--virtual-time-budget={render_ms}",
                    f"--screenshot={os.path.abspath(path)}", url], check=True, capture_output=True,
                   timeout=120)  # fmt: skip
