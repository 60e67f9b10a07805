"""What a Study keeps around its searcher: trials by number under a lock, reports and pruning, storage
and replay, and Optuna's ``trials_dataframe``.

``nas.host.study.Study`` owns the searcher (through its batch or job driver); ``StudyBase`` gives it the
rest:

- **By number, from several threads.** ``tell``, ``report`` and ``should_prune`` take a trial or its
  number and hold the study's lock, so an outside tool (an Optuna pruner, a Ray Tune scheduler) can
  drive a study trial by trial from its own threads.
- **Reports.** ``report(trial, step, value)`` records an intermediate value; with a pruner
  (``nas.host.pruning``) it decides whether the trial stops. Once stopped, a trial stays stopped.
- **Storage.** With ``storage=`` every event is appended to a journal or an SQLite file
  (``nas.host.storage``) before the study goes on; ``Study.load(path)`` (``load_study``) rebuilds the study
  by replaying them through the same compiled ``ask``/``tell`` (each trial's tokens are checked) and continues it.
  Trials that were pending when the process stopped are pending again: the next ``optimize`` runs them
  first, with the same number, configuration, budget and checkpoint folder.
- **Write-ahead.** Every ask, report and tell is checked in full, then its record written, and only then do
  the trial, the pruner and the searcher move: a refused call or a failed write (one ``StorageError``
  naming the file and the cause) leaves the study as it was, and the same call goes on once the cause is
  gone. ``Study.load(path, read_only=True)`` (or a file on read-only media) loads for reading only.
- **Checkpoint folders.** With a ``directory`` (default: next to the storage file, ``study_trials/``)
  trial ``n`` gets ``<directory>/trial_0000n``, created when it is asked. A study file keeps the default
  as "next to the file" (a moved study finds its folders there); a load creates no folder.
"""

from __future__ import annotations

import math
import os
import threading

import numpy as np

from nas.host import storage as st
from nas.host.study_record import read_settings, resolve_directory, settings_record
from nas.host.trials import (
    BudgetSpent,
    NoTrialNow,
    Trial,
    as_value,
    checkpoint_key,
    now,
    read_values,
    report_step,
)


class StudyBase:
    kind = ""  # "single" | "multi_fidelity": the driver (batches or jobs) the journal's settings rebuild
    num_objectives = 1  # a multi-objective Study's: len(directions) (nas.host.objectives)

    def _setup_base(self, storage, directory, pruner=None) -> None:
        self._lock = threading.RLock()
        self.pruner = pruner
        self._stopped: set[int] = set()  # trials the pruner stopped
        self._replaying = False
        self._header_stale = False
        if directory is not None and not isinstance(directory, (str, os.PathLike)):
            raise TypeError(f"directory must be a folder path or None (next to the storage file), got {directory!r}")
        self._storage_spec = storage
        self.directory = os.fspath(directory) if directory is not None else st.default_directory(storage)
        self._storage = None
        if storage is None:
            return
        header = self._header_record()  # a setting with no JSON form is refused before any file is touched
        store = st.open_storage(storage)
        try:
            records = store.records()
            if records:
                path = getattr(store, "path", storage)
                if records[0].get("event") != "study":
                    raise st.StorageError(f"{path} holds records that are not a study's; give this study a new "
                                          "storage")  # fmt: skip
                raise st.StorageError(f"{path} already holds a study: continue it with Study.load({path!r}), "
                                      "or give this study a new storage")  # fmt: skip
            reason = st.read_only_reason(store)
            if reason:
                raise st.read_only_error(getattr(store, "path", storage), reason)
            self._storage = store
            self._write(header)
        except BaseException:
            self._storage = None
            store.close()  # the file as it was, its lock released
            raise

    # -- storage ---------------------------------------------------------------------------------
    def _settings(self) -> dict:
        """The constructor's arguments (the journal's first record, as JSON: nas.host.study_record)."""
        raise NotImplementedError

    def _directory_setting(self) -> str | None:
        """The directory a study file keeps: None for the default next to the storage (a moved study finds its
        folders next to its file), else the folder given."""
        if self.directory is None or self.directory == st.default_directory(self._storage_spec):
            return None
        return self.directory

    def _header_record(self) -> dict:
        return settings_record(self.kind, self._settings())  # JSON data (nas.host.study_record)

    def _journal_header(self, reset: bool = False) -> None:
        if self._storage is None:
            return
        record = self._header_record()
        if not reset:
            self._write(record)
            return
        self.check_writable()
        self._header_stale = True  # the driver changed (optimize's batch_size, n_workers): rewritten before any record
        try:
            self._storage.reset(record)
        except OSError as e:
            raise st.write_failed(self._storage_name(), e) from None
        self._header_stale = False

    def _storage_name(self) -> str:
        return str(getattr(self._storage, "path", None) or self._storage_spec)

    def check_writable(self) -> None:
        """A one-line ``StorageError`` if the study's storage cannot be written (read-only: it loads for reading)."""
        if self._storage is None:  # no storage: nothing to refuse (the common case, on every ask and tell)
            return
        reason = st.read_only_reason(self._storage)
        if reason and not self._replaying:
            raise st.read_only_error(self._storage_name(), reason)

    def _write(self, record: dict) -> None:
        """Appends ``record``; an OSError from any storage object is the one line naming the file (nothing changed)."""
        try:
            self._storage.append(record)
        except st.StorageError:
            raise
        except OSError as e:
            raise st.write_failed(self._storage_name(), e) from None

    def _journal(self, record: dict) -> None:
        """Writes ``record`` before the study moves (write-ahead): a failed write raises and changes nothing."""
        if self._storage is not None and not self._replaying:
            if self._header_stale:  # a rewrite of the settings that failed: it goes first
                self._journal_header(reset=True)
            self._write(record)

    @classmethod
    def load(cls, storage, directory: str | None = None, *, read_only: bool = False):
        """The study kept in ``storage`` (a journal path or ``sqlite:///path.db``), continued where it stopped.

        ``read_only=True`` (or a file on read-only media) loads it for reading: its trials, best values and
        dataframe; asking or telling then says that it cannot continue there. A path that does not exist, or a
        file that is not a study's, is refused with one line and left as it was."""
        if not isinstance(read_only, bool):
            raise TypeError(f"read_only must be True or False, got {read_only!r}")
        store = st.open_storage(storage, create=False, read_only=read_only)
        try:
            return cls._load_from(store, storage, directory)
        except BaseException:
            store.close()  # the lock goes with it: the repaired file loads in this process
            raise

    @classmethod
    def _load_from(cls, store, storage, directory):
        records = store.records()
        where = os.fspath(storage) if isinstance(storage, (str, os.PathLike)) else getattr(store, "path", storage)
        if not records or records[0].get("event") != "study":
            raise st.StorageError(f"{where} holds no study (its first record is not a study's settings: "
                                  f"{'the file is empty' if not records else 'deleted or edited?'}); create one "
                                  "with Study(..., storage=...)")  # fmt: skip
        settings = read_settings(records[0], where)  # JSON data only: nothing in the file runs
        # trials whose folders a continued study needs (reading needs none: a read-only load never refuses)
        needs = st.read_only_reason(store) is None and any(r.get("event") == "ask" for r in records[1:])
        settings["directory"] = resolve_directory(settings.get("directory"), storage, directory, needs)
        kind = records[0].get("kind")
        if kind not in ("single", "multi_fidelity"):
            raise st.StorageError(f"{where}: the study it holds does not rebuild (its kind {kind!r} is not "
                                  "'single' or 'multi_fidelity')")  # fmt: skip
        _budget_setting(settings, kind)
        settings.setdefault("ranges", "grid")  # a file before nasjax 0.3: every range on the default grid
        try:
            study = cls(**settings)  # the one Study: its settings choose the driver (batches or jobs)
        except (KeyError, TypeError, ValueError) as e:  # settings that do not rebuild a study: one line, the file
            raise st.StorageError(f"{where}: the study it holds does not rebuild ({e})") from None
        study._storage_spec = storage
        study._replay(records[1:], where)
        study._storage = store
        if st.read_only_reason(store) is None:
            for t in study.pending():  # their folders, as when they were asked (never the folder itself)
                if t.checkpoint_dir is not None and os.path.isdir(study.directory):
                    os.makedirs(t.checkpoint_dir, exist_ok=True)
        return study

    def _replay(self, records: list[dict], where) -> None:
        self._replaying = True
        try:
            for i, r in enumerate(records):
                at = f"{where}, record {i + 2}"
                try:
                    self._replay_one(r, at)
                except (KeyError, IndexError, TypeError, ValueError, AttributeError, NoTrialNow, BudgetSpent) as e:
                    raise st.StorageError(f"{at}: the {r.get('event')!r} record does not replay "
                                          f"({type(e).__name__}: {e}); the file was edited or lines of it were "
                                          "deleted: restore it") from None  # fmt: skip
        finally:
            self._replaying = False

    def _replay_one(self, r: dict, where: str) -> None:
        event = r["event"]
        if event == "ask":
            trial = self._ask_replayed(r)
            if trial.number != r["number"] or trial.tokens.tolist() != r["tokens"]:
                raise st.StorageError(f"{where}: replaying the searcher asked trial {trial.number} with "
                                      f"{trial.tokens.tolist()}, the file holds {r['number']} with {r['tokens']}; "
                                      "the file was edited, or it belongs to another version of the "
                                      "searcher")  # fmt: skip
            trial.datetime_start = _time(r.get("start"))
        elif event == "no_trial":
            try:
                self._ask_replayed(r)
            except RuntimeError:  # NoTrialNow, BudgetSpent: refused as when it was recorded
                return
            raise st.StorageError(f"{where}: replaying, the searcher handed out a trial where it had none")
        elif event == "report":
            if self.report(r["number"], r["step"], r["value"]) != r["prune"]:
                raise st.StorageError(f"{where}: replaying, the pruner decided otherwise for trial {r['number']}")
        elif event == "tell":
            number = r["number"]
            if not isinstance(number, int) or not 0 <= number < len(self.trials):
                raise st.StorageError(f"{where}: a tell of trial {number!r}, which was never asked (lines deleted?)")
            if r["state"] not in ("complete", "failed", "pruned"):
                raise st.StorageError(f"{where}: trial {number} told with the state {r['state']!r} (complete, failed "
                                      "or pruned): the file was edited")  # fmt: skip
            trial = self.trials[number]
            if trial.state != "pending":
                raise st.StorageError(f"{where}: trial {number} is told twice (lines repeated?)")
            value = read_values(r["values"] if "values" in r else r["value"], number, self.num_objectives)
            cost = r.get("cost")  # as written (a file of nasjax before 0.3 may keep a NaN or negative one)
            if cost is not None and (isinstance(cost, bool) or not isinstance(cost, (int, float))):
                raise st.StorageError(f"{where}: trial {number} told with the cost {cost!r}, not a number")
            trial.user_attrs.update(r.get("user_attrs") or {})
            self._finish(trial, value, r["state"], cost)
            trial.datetime_complete = _time(r.get("complete"))
        else:
            raise st.StorageError(f"{where}: an unknown event {event!r}")

    def _ask_replayed(self, record: dict) -> Trial:
        return self.ask()

    def close(self) -> None:
        """Releases the storage (its lock); the study stays usable in memory."""
        if self._storage is not None:
            self._storage.close()
            self._storage = None

    # -- trials ------------------------------------------------------------------------------------
    def _new_trial(self, tokens, **fields) -> Trial:
        """Trial ``len(trials)``, written to storage before the study holds it (write-ahead)."""
        number = len(self.trials)
        trial = Trial(number=number, tokens=tokens, params=self.space.to_spec(tokens), datetime_start=now(),
                      declared=getattr(self, "_declared", None), _study=self, **fields)  # fmt: skip
        if self._storage is not None and not self._replaying:  # built only to be written (tolist, isoformat)
            record = {"event": "ask", "number": number, "tokens": trial.tokens.tolist(),
                      "start": _iso(trial.datetime_start)}  # fmt: skip
            for k in ("fidelity", "parent"):
                if fields.get(k) is not None:
                    record[k] = fields[k]
            self._journal(record)
        if self.directory is not None:
            trial.checkpoint_dir = os.path.join(self.directory, checkpoint_key(number))
            if not self._replaying:  # a load creates no folder (read-only media, a moved study)
                os.makedirs(trial.checkpoint_dir, exist_ok=True)
            if trial.parent is not None:
                trial.parent_checkpoint_dir = os.path.join(self.directory, checkpoint_key(trial.parent))
        self.trials.append(trial)
        return trial

    def get_trial(self, trial: Trial | int) -> Trial:
        """The study's trial ``trial`` (a Trial of this study, or its number)."""
        if isinstance(trial, Trial) and 0 <= trial.number < len(self.trials) and self.trials[trial.number] is trial:
            return trial
        if isinstance(trial, (int, np.integer)) and not isinstance(trial, bool) and 0 <= trial < len(self.trials):
            return self.trials[int(trial)]
        raise ValueError(
            f"{trial!r} is not a trial of this study (give a Trial, or a number 0..{len(self.trials) - 1})"
        )

    def _sign(self) -> float:
        return -1.0 if self.direction == "minimize" else 1.0

    def report(self, trial: Trial | int, step: float, value: float) -> bool:
        """Records ``value`` at ``step`` (a finite number >= 0, in the fidelity's unit) for a pending trial;
        returns whether the pruner stops it. Checked in full and written to storage before anything changes."""
        with self._lock:
            t = self.get_trial(trial)
            if t.state != "pending":
                raise ValueError(f"trial {t.number} is {t.state}; report while it runs")
            step = report_step(step, t.number)
            v = as_value(value, t.number)
            if v is None:
                raise TypeError(f"report: the value of trial {t.number} at step {step:g} must be a number")
            self.check_writable()
            decided = None
            if self.pruner is not None and t.number not in self._stopped:
                score = self._sign() * v if math.isfinite(v) else -math.inf
                decided = self.pruner.decide(t.number, step, score)  # (rungs, prune): nothing changed yet
            prune = decided[1] if decided is not None else t.number in self._stopped
            self._journal({"event": "report", "number": t.number, "step": step, "value": v, "prune": prune})
            if decided is not None:
                self.pruner.commit(decided[0])
                if prune:
                    self._stopped.add(t.number)
            t.intermediate_values[step] = v
            return prune

    def should_prune(self, trial: Trial | int) -> bool:
        """Whether the pruner stopped ``trial`` at its last report (False without a pruner)."""
        with self._lock:
            return self.get_trial(trial).number in self._stopped

    def _finish(self, trial: Trial, value: float | None, state: str, cost: float | None) -> None:
        """Records how ``trial`` ended (``complete``, ``failed``, ``pruned``) and tells the searcher."""
        raise NotImplementedError

    def _journal_tell(self, trial: Trial, state: str, value, values, cost, complete) -> None:
        """Writes how ``trial`` ended, before the trial or the searcher changes (write-ahead)."""
        if self._storage is None or self._replaying:  # nothing is written: the record is not built (isoformat)
            return
        record = {"event": "tell", "number": trial.number, "state": state, "value": value, "cost": cost,
                  "complete": _iso(complete)}  # fmt: skip
        if self.num_objectives > 1:
            record["values"] = values
        if trial.user_attrs:
            record["user_attrs"] = _json_attrs(trial)
        self._journal(record)

    # -- results -------------------------------------------------------------------------------------
    @property
    def best_params(self):
        """The best trial's configuration, computed afresh from its tokens (edits of ``trial.params`` do not leak)."""
        return self.space.to_spec(self.best_trial.tokens)

    @property
    def best_value(self) -> float:
        return self.best_trial.value

    def trials_dataframe(self):
        """A ``pandas.DataFrame``, one row per trial, as Optuna's: number, value (a multi-objective study:
        ``values_0``, ``values_1``, ...), state, the budget and parent of multi-fidelity trials, start, end,
        duration, cost, and one ``params_<name>`` column per hyperparameter."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("trials_dataframe needs pandas: pip install pandas") from None
        rows = []
        for t in self.trials:
            m = self.num_objectives
            value = {"value": t.value} if m == 1 else {f"values_{i}": None if t.values is None else t.values[i]
                                                        for i in range(m)}  # fmt: skip
            row = {"number": t.number, **value, "state": t.state, "fidelity": t.fidelity, "budget": t.budget,
                   "parent": t.parent, "datetime_start": t.datetime_start, "datetime_complete": t.datetime_complete,
                   "duration": t.duration, "cost": t.cost}  # fmt: skip
            params = t.params if isinstance(t.params, dict) else {"": t.params}
            row.update({f"params_{k}" if k else "params": v for k, v in params.items()})
            rows.append(row)
        return pd.DataFrame(rows)


def _budget_setting(settings: dict, kind: str) -> None:
    """A study file keeps the searcher's budget as ``max_queries`` (trials, or full trainings): the Study's
    argument for it, ``max_trials`` or ``max_resource`` (no deprecation: the file is data, not a call)."""
    if "max_queries" not in settings:
        return
    q = settings.pop("max_queries")
    fidelities = settings.get("fidelities")
    if kind == "multi_fidelity" and fidelities and isinstance(q, int):
        settings["max_resource"] = q * fidelities[-1]
    else:
        settings["max_trials"] = q


def _json_attrs(trial: Trial) -> dict:
    """``trial.user_attrs`` as the journal keeps them: JSON data, else one line naming the attribute."""
    import json

    for key, value in trial.user_attrs.items():
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError):
            raise TypeError(f"trial {trial.number}: user attribute {key!r} is {value!r:.60}, which a study file "
                            "cannot keep: set JSON data (a number, a string, a list or dict of them)") from None
    return dict(trial.user_attrs)


def _iso(t) -> str | None:
    return None if t is None else t.isoformat()


def _time(text):
    import datetime

    return None if text is None else datetime.datetime.fromisoformat(text)
