"""The first record of a study file: the study's settings as JSON data, read back without running code.

``settings_record`` writes what a Study's ``_settings()`` returns (its constructor's arguments) as::

    {"event": "study", "kind": "single", "version": 2, "settings": {"space": {"lr": [0.1, 0.01]},
     "searcher": "regularized_evolution", "direction": "minimize", "seed": 0, "max_queries": 12,
     "pruner": null, ..., "population_size": 6}}

the space as its declaration (``spaces.declaration``), every other setting as a plain value (a tuple as
``{"__tuple__": [...]}``, so it comes back a tuple). A setting with no JSON form (a function, an
array, a space whose methods are code) is refused when the study is created, with a line naming it.

``read_settings`` reads that record back with ``json`` and the declarations only: nothing in a study
file is unpickled or imported, so opening a file someone sent you runs none of it. A record written
by nasjax 0.2 (``"version": 1``: the settings pickled) is refused with the command that converts it
(``python -m scripts.migrate_journal OLD NEW --trust``, for a file you trust); a string anywhere in the
settings that holds a pickle is refused by name.
"""

from __future__ import annotations

import base64
import binascii
import os

from nas.host.storage import StorageError
from spaces.declaration import declaration, from_declaration, from_plain, plain

VERSION = 2  # 1: nasjax 0.2, the settings pickled; 2: the settings as JSON data


def settings_record(kind: str, settings: dict) -> dict:
    """The study file's first record for a Study of ``kind`` (module doc); ``StorageError`` naming a setting
    that has no JSON form."""
    data = {}
    for name, value in settings.items():
        try:
            data[name] = declaration(value) if name == "space" else plain(value, f"setting {name!r}")
        except ValueError as e:
            raise StorageError(f"a study file keeps the study's settings as JSON data: {e}; or create the "
                               "study without storage") from None  # fmt: skip
    return {"event": "study", "kind": kind, "version": VERSION, "settings": data}


def read_settings(record: dict, storage) -> dict:
    """The settings (a Study's constructor arguments) that ``record``, the first of ``storage``, holds; a
    ``StorageError`` naming the file and what it refuses for a record that is not this version's data."""
    version, settings = record.get("version"), record.get("settings")
    if version == 1:
        old = os.fspath(storage) if isinstance(storage, (str, os.PathLike)) else "OLD"
        root, ext = os.path.splitext(old)
        raise StorageError(f"{storage} was written by nasjax 0.2, which kept the study's settings as a pickle, and "
                           "loading a pickle runs code from the file: refused; if you trust the file, convert it with "
                           f"`python -m scripts.migrate_journal {old} {root}_v{VERSION}{ext} --trust` and load the "
                           "new file")  # fmt: skip
    if version != VERSION:
        raise StorageError(f"{storage}: a study record of version {version!r}; this nasjax reads version {VERSION} "
                           "(a newer nasjax wrote the file: update nasjax to continue it)")  # fmt: skip
    where = _pickle_in(settings, "settings")
    if where is not None:
        raise StorageError(f"{storage}: {where} holds a pickle (base64); a study file holds data only, so it is "
                           "refused, and none of it ran")  # fmt: skip
    if not isinstance(settings, dict):
        raise StorageError(f"{storage}: the study's settings are {type(settings).__name__}, not a JSON object")
    try:
        return {name: from_declaration(v) if name == "space" else from_plain(v) for name, v in settings.items()}
    except ValueError as e:
        raise StorageError(f"{storage}: the study's settings do not read as this version's data ({e})") from None


def _pickle_in(data, where: str) -> str | None:
    """Where in ``data`` a string holds a base64 pickle (protocol 2 or later: ``pickle.dumps``'s), or None."""
    if isinstance(data, str):
        try:
            raw = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            return None
        return where if len(raw) > 2 and raw[0] == 0x80 and 2 <= raw[1] <= 5 and raw.endswith(b".") else None
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        found = _pickle_in(value, f"{where}[{key!r}]")
        if found is not None:
            return found
    return None


def resolve_directory(stored, storage, given, needed: bool) -> str | None:
    """The trials' checkpoint folder of a loaded study: ``given`` (``Study.load(..., directory=)``); else the one
    next to the storage file when the file keeps none (the default) or keeps a folder of that name that moved
    with it; else the folder the file keeps. When ``needed`` (a study to continue, with trials) and the folder is
    nowhere, it is refused with the fix (its promotions would train from scratch, and the old folder would be
    created again)."""
    from nas.host.storage import default_directory, storage_path

    if given is not None:
        if not isinstance(given, (str, os.PathLike)):
            raise TypeError(f"directory must be a folder path or None (next to the storage file), got {given!r}")
        return os.fspath(given)
    default = default_directory(storage)
    if stored is None:
        return default
    if not isinstance(stored, str):
        raise StorageError(f"{storage}: the study's directory setting is {stored!r}, not a folder path")
    candidates = [stored]
    if isinstance(storage, (str, os.PathLike)) and not os.path.isabs(stored):
        candidates.append(os.path.join(os.path.dirname(storage_path(storage)), stored))
    moved = default is not None and os.path.basename(os.path.normpath(stored)) == os.path.basename(default)
    if moved:
        candidates.insert(0, default)  # relative to the storage: where a moved study's folders are
    for folder in candidates:
        if os.path.isdir(folder):
            return folder
    if not needed:
        return default if moved else stored
    raise StorageError(f"{storage}: the trials' checkpoint folder {stored} is gone (was the study moved without it?); "
                       f"move it back, or give Study.load({os.fspath(storage)!r}, directory=...) the folder that "
                       "holds its trial_00000, trial_00001, ...")  # fmt: skip
