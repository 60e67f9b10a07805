"""The workdir of an experiment: one run, written atomically, locked while it runs, resumable.

    config.json             the config of the run (a rerun must agree on what the numbers mean)
    history/<label>.npz     every trial's queries of a finished searcher (a multi-fidelity one's evaluations,
                            with their fidelity, resource and finish time; ``metric.<name>``: the metrics
                            the run records, ``config.metrics``)
    ckpt/<label>.npz        checkpoint of an unfinished searcher (``nas.engine.checkpoint``)
    metrics.jsonl           one JSON line per compiled chunk and searcher (progress)
    summary.json, results.csv, curves.png   the reports (``nas.experiment.report``)
    .lock                   held by the process that runs in the workdir; removed when it exits

Every file is written atomically (``spaces.files``): a kill leaves the old file
or the new one. A chunk's metrics line is written before its checkpoint and
replaces any earlier line of the same searcher and step, so a kill between the
two loses nothing and a resumed run writes no line twice. Unreadable files get
an error that names the file and what to do.

The lock is ``fcntl.flock`` on ``.lock``: the kernel releases it when its process dies, so the
``.lock`` file a killed run leaves behind (holding the dead pid) is taken by the next run. A run that
exits normally, an error included, removes the file while it still holds the lock; a run that
opened the file just before then finds, once it holds the lock, that the path no longer names the
file it locked, and locks the new file instead (two runs never both believe they own the workdir).
"""

from __future__ import annotations

import json
import os

import numpy as np

from nas.experiment import report as rep
from nas.experiment.config_fields import BENCH_OPTIONS, RUN_FIELDS, ConfigError, to_dict
from spaces.data_files import DamagedFile, npz_arrays
from spaces.files import savez_atomic, write_text_atomic

HISTORY_FIELDS = ("tokens", "score", "report_score", "cost")
# a multi-fidelity searcher's history also has (nas.engine.multi_fidelity_runner.MFHistory); older workdirs lack them
MF_HISTORY_FIELDS = ("fidelity", "resource", "finish")
METRIC_PREFIX = "metric."  # a recorded metric's array in a history file (History.metrics)


def _same_file(fd: int, path: str) -> bool:
    """Whether ``path`` still names the file open as ``fd``."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)


class Workdir:
    """Paths, checks and the lock of one experiment directory (``open`` before writing anything)."""

    def __init__(self, path: str):
        if not path or not str(path).strip():
            raise ConfigError("--workdir is empty: give the directory to write the run into")
        self.path = os.path.abspath(os.path.expanduser(str(path)))
        self._lock_fd = None

    def file(self, *parts: str) -> str:
        return os.path.join(self.path, *parts)

    # -- creation and the lock -------------------------------------------------------
    def open(self) -> Workdir:
        """Creates the directory tree and takes the lock (a ``ConfigError`` when impossible or taken)."""
        if os.path.exists(self.path) and not os.path.isdir(self.path):
            raise ConfigError(f"--workdir {self.path} is a file, not a directory; choose another path")
        try:
            for sub in ("history", "ckpt"):
                os.makedirs(self.file(sub), exist_ok=True)
        except OSError as e:
            raise ConfigError(f"cannot create --workdir {self.path}: {e.strerror or e}; choose another path") from e
        if not os.access(self.path, os.W_OK | os.X_OK):
            raise ConfigError(f"--workdir {self.path} is not writable; choose another path")
        self._lock()
        return self

    def _lock(self) -> None:
        try:
            import fcntl
        except ImportError:  # not POSIX: no lock (documented limit)
            return
        path = self.file(".lock")
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                other = os.read(fd, 64).decode(errors="replace").strip() or "?"
                os.close(fd)
                raise ConfigError(
                    f"--workdir {self.path} is in use by another run (pid {other}); wait for it to finish, "
                    "or use another --workdir"
                ) from None
            if _same_file(fd, path):
                break
            os.close(fd)  # the holder removed this file after we opened it: lock the current one
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._lock_fd = fd

    def close(self) -> None:
        """Removes ``.lock`` and releases the lock (closing the file releases it)."""
        if self._lock_fd is not None:
            try:
                os.unlink(self.file(".lock"))
            except OSError:
                pass  # already gone (the workdir was deleted meanwhile): nothing to clean up
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self) -> Workdir:
        return self.open()

    def __exit__(self, *exc) -> None:
        self.close()

    # -- the config of the run -----------------------------------------------------------
    def saved_config(self) -> dict | None:
        path = self.file("config.json")
        if not os.path.exists(path):
            return None
        try:
            with open(path, encoding="utf-8") as f:
                return json.load(f)
        except (OSError, ValueError) as e:
            raise ConfigError(
                f"{path} is unreadable ({e}); delete the workdir to start over, or restore the file"
            ) from e

    def check_config(self, config) -> None:
        """A rerun must agree with the saved config on what the numbers mean (else a ConfigError)."""
        old = self.saved_config()
        if old is None:
            return
        new = json.loads(json.dumps(rep.clean(to_dict(config))))

        def value(cfg, k):  # a data-file field a config predates is unset, as ""
            v = cfg.get(k)
            return "" if v is None and k in BENCH_OPTIONS else v

        diffs = [f"{k}: {old.get(k)!r} -> {new.get(k)!r}" for k in RUN_FIELDS if value(old, k) != value(new, k)]
        for label, entry in new["searchers"].items():
            if label in old.get("searchers", {}) and old["searchers"][label] != entry:
                diffs.append(f"searchers.{label}: {old['searchers'][label]} -> {entry}")
        if diffs:
            raise ConfigError(
                f"workdir {self.path} holds a run with a different config; resuming it would mix results: "
                + "; ".join(diffs)
                + ". Use a new --workdir, or delete this one to start over."
            )

    def save_config(self, config) -> None:
        rep.write_json(self.file("config.json"), to_dict(config))

    # -- per-searcher files ----------------------------------------------------------------
    def history_path(self, label: str) -> str:
        return self.file("history", f"{label}.npz")

    def ckpt_path(self, label: str) -> str:
        return self.file("ckpt", f"{label}.npz")

    def save_history(self, label: str, history, entry: dict) -> None:
        fields = HISTORY_FIELDS + tuple(k for k in MF_HISTORY_FIELDS if hasattr(history, k))
        arrays = {k: np.asarray(getattr(history, k)) for k in fields}
        arrays.update({METRIC_PREFIX + k: np.asarray(v) for k, v in (getattr(history, "metrics", None) or {}).items()})
        savez_atomic(self.history_path(label), {**arrays, "entry": np.asarray(json.dumps(entry))})

    def load_history(self, label: str) -> dict[str, np.ndarray]:
        """The arrays of a finished searcher (a ConfigError naming the file when it is unreadable)."""
        path = self.history_path(label)
        try:
            z = npz_arrays(path)
        except DamagedFile as e:
            raise ConfigError(f"{path} is unreadable ({e.what}); delete it to run searcher {label!r} again") from e
        missing = [k for k in HISTORY_FIELDS if k not in z]
        if missing:
            raise ConfigError(f"{path} is unreadable (it lacks the array(s) {missing}); delete it to run searcher "
                              f"{label!r} again")  # fmt: skip
        fields = HISTORY_FIELDS + tuple(k for k in MF_HISTORY_FIELDS if k in z)  # older: none
        out = {k: z[k] for k in fields}
        metrics = {k[len(METRIC_PREFIX) :]: v for k, v in z.items() if k.startswith(METRIC_PREFIX)}
        return {**out, "metrics": metrics} if metrics else out

    def record_metrics(self, line: dict) -> None:
        """Adds one chunk's line to ``metrics.jsonl``, replacing an earlier line of the same searcher and step."""
        path = self.file("metrics.jsonl")
        kept = []
        if os.path.exists(path):
            with open(path, encoding="utf-8", errors="replace") as f:  # a garbled line is dropped below
                for raw in f.read().splitlines(keepends=True):
                    if not raw.endswith("\n"):
                        continue  # a partial line from an interrupted non-atomic writer
                    try:
                        old = json.loads(raw)
                    except json.JSONDecodeError:
                        continue
                    if (old.get("searcher"), old.get("step")) != (line["searcher"], line["step"]):
                        kept.append(raw)
        write_text_atomic(path, "".join(kept) + json.dumps(rep.clean(line)) + "\n")
