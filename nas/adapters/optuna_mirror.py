"""A Study seen where Optuna users look: mirrored live into an Optuna storage, or copied into an ``optuna.Study``.

**Live, for optuna-dashboard.** ``OptunaMirror`` wraps a study's storage and writes every event into an
Optuna storage as well, as it happens::

    from nas import Study
    from nas.adapters.optuna_mirror import OptunaMirror

    study = Study(space, "asha", fidelities=[1, 3, 9, 27],
                  storage=OptunaMirror("study.jsonl", "sqlite:///optuna.db"))
    study.optimize(objective)          # meanwhile: optuna-dashboard sqlite:///optuna.db

The study's own storage (``"study.jsonl"``, ``"sqlite:///study.db"``, or a storage object:
``nas.host.storage``) stays what ``Study.load`` replays; the Optuna storage (an RDB URL such as
``sqlite:///optuna.db``, or any ``optuna.storages`` object: ``JournalStorage(JournalFileBackend(path))``)
is written after it. ``Study.load(OptunaMirror(...))`` resumes the study, and the mirror brings the Optuna
study up to date once (trials already there are matched by their ``nasjax_number``, none is written
twice) and goes on mirroring. A failed write to the Optuna storage (the database locked, the disk full)
warns once and never stops the study; the mirror catches up at the next event.

**A copy, for Optuna's plots.** ``study.to_optuna()`` (``to_optuna`` here) gives an in-memory
``optuna.Study`` with the study's trials, which ``optuna.visualization`` and ``optuna.importance`` take.

What each nasjax trial becomes: one Optuna trial with the same number (a study mirrored from its start),
its params with their distributions (``nas.adapters.optuna_distributions``), its reports as intermediate
values (Optuna's steps are integers: a fractional step is rounded), its state (``pending`` -> RUNNING,
``complete`` -> COMPLETE, ``pruned`` -> PRUNED with its value, as Optuna's pruned trials have their last
intermediate value, ``failed`` -> FAIL), its value or values under the study's directions, and the user
attrs ``nasjax_number``, ``searcher``, ``cost``, ``checkpoint_dir`` and, in a multi-fidelity study,
``fidelity`` (the index) and ``budget`` (the value), with the objective's own ``trial.set_user_attr`` values
(written with its result; one of the names above stays the mirror's). A promotion (a trial that continues another's
training at a larger budget) is its own Optuna trial with a ``parent`` attr naming the trial it continues:
its intermediate values are what it reported itself, and its value is at its own budget.
"""

from __future__ import annotations

import datetime
import os
import threading
import warnings

from nas.adapters.optuna_distributions import distributions, token_distributions, trial_params
from nas.host import storage as st
from nas.host.study_space import make_space
from nas.host.trials import checkpoint_key
from spaces.declaration import declaration, from_declaration
from spaces.files import MissingPackageError

try:
    import optuna
    from optuna.trial import TrialState, create_trial
except ImportError as e:  # optional dependency
    raise MissingPackageError("nas.adapters.optuna_mirror needs Optuna: pip install optuna") from e

NUMBER = "nasjax_number"  # the user attr that names a mirrored trial's nasjax number
# the attributes the mirror writes itself: an objective's set_user_attr of one of these names is not copied
RESERVED = {NUMBER, "searcher", "fidelity", "budget", "parent", "checkpoint_dir", "cost"}
STATES = {"pending": TrialState.RUNNING, "complete": TrialState.COMPLETE, "pruned": TrialState.PRUNED,
          "failed": TrialState.FAIL}  # fmt: skip


def _time(text):
    return None if text is None else datetime.datetime.fromisoformat(text)


def _step(step) -> int:
    return int(round(float(step)))  # Optuna keeps integer steps (module doc)


def _values(state: str, value, values, num_objectives: int):
    """The Optuna values of a trial told ``value`` (one objective) or ``values`` (several)."""
    if state == "complete":
        return list(values) if num_objectives > 1 else [value]
    if state == "pruned" and num_objectives == 1 and value is not None:
        return [value]
    return None


class _Trial:
    """One nasjax trial as the mirror needs it: from the study's records, or from a ``Trial``."""

    def __init__(self, number, tokens, params=None, fidelity=None, budget=None, parent=None, start=None):
        self.number, self.tokens, self.params = number, tokens, params
        self.fidelity, self.budget, self.parent, self.start = fidelity, budget, parent, start
        self.reports: dict[int, float] = {}
        self.state, self.value, self.values, self.cost, self.complete = "pending", None, None, None, None
        self.checkpoint_dir = None
        self.user_attrs: dict = {}  # the objective's trial.set_user_attr values, told with the result

    def attrs(self, searcher) -> dict:
        attrs = {NUMBER: self.number, "searcher": searcher, "fidelity": self.fidelity, "budget": self.budget,
                 "parent": self.parent, "checkpoint_dir": self.checkpoint_dir, "cost": self.cost}  # fmt: skip
        own = {k: v for k, v in self.user_attrs.items() if k not in RESERVED}  # the objective's set_user_attr values
        return {**own, **{k: v for k, v in attrs.items() if v is not None}}

    def frozen(self, dists: dict, searcher, num_objectives: int):
        """The trial as an Optuna ``FrozenTrial`` template (what ``create_new_trial`` and ``add_trial`` take)."""
        values = _values(self.state, self.value, self.values, num_objectives)
        trial = create_trial(state=STATES[self.state], values=values, params=trial_params(self.params, self.tokens,
                             dists), distributions=dists, user_attrs=self.attrs(searcher),
                             intermediate_values=dict(self.reports))  # fmt: skip
        trial.datetime_start = self.start or trial.datetime_start
        if self.state != "pending":
            trial.datetime_complete = self.complete or trial.datetime_complete
        return trial


def to_optuna(study, space_arg, searcher=None, storage=None, study_name=None):
    """An ``optuna.Study`` holding ``study``'s trials (module doc): in memory, or in ``storage`` (an Optuna
    storage URL or object) under ``study_name``. ``space_arg``: the space as the Study was given it (its
    declaration gives the distributions; a space with none shows each token as a categorical)."""
    try:
        dists = distributions(declaration(space_arg))
    except ValueError:  # a NAS space: its methods are code, it has no declaration
        dists = token_distributions(study.space)
    out = optuna.create_study(storage=storage, study_name=study_name, directions=list(study.directions))
    for t in study.trials:
        one = _Trial(t.number, t.tokens, t.params, t.fidelity, t.budget, t.parent, t.datetime_start)
        one.reports = {_step(s): v for s, v in t.intermediate_values.items()}
        one.state, one.value, one.values, one.cost = t.state, t.value, t.values, t.cost
        one.complete, one.checkpoint_dir = t.datetime_complete, t.checkpoint_dir
        one.user_attrs = dict(t.user_attrs)
        out.add_trial(one.frozen(dists, searcher, study.num_objectives))
    return out


class OptunaMirror:
    """A study's storage that writes every event into an Optuna storage too (module doc).

    ``storage``: the study's own (a journal path, ``"sqlite:///study.db"``, a storage object);
    ``optuna_storage``: an Optuna storage URL or object; ``study_name``: the Optuna study's name (default: the
    study file's name without its extension)."""

    def __init__(self, storage, optuna_storage, study_name: str | None = None):
        if storage is None:
            raise ValueError("OptunaMirror(storage, optuna_storage): give the study's own storage too (a journal "
                             "path or 'sqlite:///study.db'): it is what Study.load resumes")  # fmt: skip
        self._inner = st.open_storage(storage)
        self.path = getattr(self._inner, "path", storage)
        self.directory = st.default_directory(storage)  # trials' checkpoint folders, as without the mirror
        if study_name is None:
            study_name = os.path.splitext(os.path.basename(st.storage_path(self.path)))[0]
        self.study_name = str(study_name)
        self._optuna = optuna.storages.get_storage(optuna_storage) if isinstance(optuna_storage, str) \
            else optuna_storage  # fmt: skip
        self._lock = threading.Lock()
        self._study_id = None
        self._ids: dict[int, int] = {}  # nasjax number -> Optuna trial id
        self._stale = True  # the Optuna study is to be brought up to date from the study's records
        self._warned = False

    # -- the storage interface (nas.host.storage) -----------------------------------------------------
    def records(self) -> list[dict]:
        return self._inner.records()

    def append(self, record: dict) -> None:
        if record.get("event") == "study":  # a new study: its Optuna study is checked before anything is written
            with self._lock:
                self._open(record, new=True)
                self._inner.append(record)  # the first record of an empty storage: nothing else to catch up
                self._stale = False
            return
        self._inner.append(record)
        self._mirror(record)

    def reset(self, record: dict) -> None:
        self._inner.reset(record)
        self._mirror(record)

    def close(self) -> None:
        self._inner.close()

    @property
    def read_only(self) -> str | None:
        """Why the study's own storage cannot be written (``nas.host.storage``), or None."""
        return getattr(self._inner, "read_only", None)

    # -- the Optuna side -------------------------------------------------------------------------------
    def _open(self, record: dict, new: bool = False) -> None:
        """The Optuna study for the study whose settings ``record`` holds (created, or found by name)."""
        s = record["settings"]
        directions = list(s.get("directions") or [s.get("direction") or "maximize"])
        try:
            optuna_study = optuna.create_study(storage=self._optuna, study_name=self.study_name,
                                               directions=directions, load_if_exists=True)  # fmt: skip
        except Exception as e:  # noqa: BLE001 - Optuna's own errors: one line, the fix
            raise st.StorageError(f"OptunaMirror: the Optuna study {self.study_name!r} cannot be opened "
                                  f"({e})") from None
        kept = [d.name.lower() for d in optuna_study.directions]
        if kept != directions:
            raise st.StorageError(f"OptunaMirror: the Optuna study {self.study_name!r} has the directions {kept}, this "
                                  f"study {directions}: give OptunaMirror another study_name=")  # fmt: skip
        if new and any(NUMBER in t.user_attrs for t in optuna_study.get_trials(deepcopy=False)):
            raise st.StorageError(f"OptunaMirror: the Optuna study {self.study_name!r} already holds the trials of "
                                  "another study: give OptunaMirror another study_name=, or continue that study "
                                  "with Study.load")  # fmt: skip
        self._study_id = optuna_study._study_id
        self._settings, self._directions = s, directions
        self._dists = distributions(s["space"])
        self._space = make_space(from_declaration(s["space"]), searcher=s.get("searcher"), warn=False,
                                 ranges=s.get("ranges", "grid"))
        for key in ("searcher", "fidelities", "max_queries"):
            if s.get(key) is not None:
                optuna_study.set_user_attr(key, s[key])

    def _mirror(self, record: dict) -> None:
        with self._lock:
            try:
                if self._stale:
                    self._catch_up()
                else:
                    self._apply(record)
            except Exception as e:  # noqa: BLE001 - the mirror never stops the study (module doc)
                self._stale = True
                if not self._warned:
                    self._warned = True
                    warnings.warn(f"OptunaMirror {self.study_name!r}: writing to the Optuna storage failed "
                                  f"({e!r:.200}); the study goes on, and the mirror catches up at its next event",
                                  stacklevel=4)  # fmt: skip

    def _trial(self, record: dict) -> _Trial:
        s, number = self._settings, record["number"]
        fidelity, fidelities = record.get("fidelity"), s.get("fidelities")
        budget = fidelities[fidelity] if fidelity is not None and fidelities else None
        params = record.get("params", None)
        if params is None:
            params = self._space.to_spec(record["tokens"])
        t = _Trial(number, record["tokens"], params, fidelity, budget, record.get("parent"), _time(record.get("start")))
        directory = s.get("directory") or self.directory
        t.checkpoint_dir = None if directory is None else os.path.join(directory, checkpoint_key(number))
        return t

    def _told(self, t: _Trial, record: dict) -> None:
        t.state, t.value, t.values = record["state"], record.get("value"), record.get("values")
        t.cost, t.complete = record.get("cost"), _time(record.get("complete"))
        t.user_attrs = dict(record.get("user_attrs") or {})

    def _apply(self, record: dict) -> None:
        event, storage = record.get("event"), self._optuna
        if event == "study":
            self._open(record)
        elif event == "ask":
            t = self._trial(record)
            frozen = t.frozen(self._dists, self._settings.get("searcher"), len(self._directions))
            self._ids[t.number] = storage.create_new_trial(self._study_id, template_trial=frozen)
        elif event == "report":
            storage.set_trial_intermediate_value(self._ids[record["number"]], _step(record["step"]), record["value"])
        elif event == "tell":
            trial_id = self._ids[record["number"]]
            for key, value in (record.get("user_attrs") or {}).items():
                if key not in RESERVED:
                    storage.set_trial_user_attr(trial_id, key, value)
            if record.get("cost") is not None:
                storage.set_trial_user_attr(trial_id, "cost", record["cost"])
            values = _values(record["state"], record.get("value"), record.get("values"), len(self._directions))
            storage.set_trial_state_values(trial_id, STATES[record["state"]], values)

    def _catch_up(self) -> None:
        """Brings the Optuna study up to date with every record of the study's storage (module doc)."""
        records = self._inner.records()
        if not records or records[0].get("event") != "study":
            return
        self._open(records[0])
        trials: dict[int, _Trial] = {}
        for r in records[1:]:
            if r["event"] == "ask":
                trials[r["number"]] = self._trial(r)
            elif r["event"] == "report":
                trials[r["number"]].reports[_step(r["step"])] = r["value"]
            elif r["event"] == "tell":
                self._told(trials[r["number"]], r)
        storage, searcher, m = self._optuna, self._settings.get("searcher"), len(self._directions)
        mirrored = {t.user_attrs[NUMBER]: t for t in storage.get_all_trials(self._study_id, deepcopy=False)
                    if NUMBER in t.user_attrs}  # fmt: skip
        for number, t in trials.items():
            there = mirrored.get(number)
            if there is None:
                self._ids[number] = storage.create_new_trial(self._study_id, template_trial=t.frozen(self._dists,
                                                             searcher, m))  # fmt: skip
                continue
            self._ids[number] = there._trial_id
            if there.state != TrialState.RUNNING:
                continue
            for step, value in t.reports.items():
                if there.intermediate_values.get(step) != value:
                    storage.set_trial_intermediate_value(there._trial_id, step, value)
            if t.state != "pending":
                for key, value in t.user_attrs.items():
                    if key not in RESERVED:
                        storage.set_trial_user_attr(there._trial_id, key, value)
                if t.cost is not None:
                    storage.set_trial_user_attr(there._trial_id, "cost", t.cost)
                storage.set_trial_state_values(there._trial_id, STATES[t.state], _values(t.state, t.value, t.values, m))
        self._stale = False
