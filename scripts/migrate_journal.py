"""Converts a study file written by nasjax 0.2 (its settings pickled) into one of data only, for a file you trust.

    python -m scripts.migrate_journal OLD NEW --trust

``OLD`` and ``NEW`` are storages as a Study takes them (``study.jsonl`` or ``sqlite:///study.db``).
nasjax 0.2 kept a study's settings (space, searcher, options) as a pickle, and unpickling runs
whatever code the file holds, so ``Study.load`` refuses such a file. This command unpickles it only
with ``--trust``: you vouch that the file is yours (or from someone you trust). It writes ``NEW`` with
the settings as JSON data (``nas.host.study_record``) and every other record as it was; ``OLD`` is not
changed. ``Study.load(NEW)`` then continues the study. Mistakes are one line and exit code 2.
"""

from __future__ import annotations

import base64
import os
import pickle
import sys

from absl import app, flags

from nas.host.storage import StorageError, open_storage, storage_path
from nas.host.study_record import VERSION, settings_record

_TRUST = flags.DEFINE_bool("trust", False, "Unpickle OLD's settings: only for a file you trust (it runs its code).")


def migrate(old: str, new: str, trust: bool = False) -> int:
    """Writes ``new``: ``old``'s records with its pickled settings as JSON data; returns the records written."""
    if os.path.abspath(storage_path(old)) == os.path.abspath(storage_path(new)):
        raise StorageError(f"{new} is {old}: give NEW another path (OLD stays as it was)")
    source = open_storage(old)
    try:
        records = source.records()
    finally:
        source.close()
    if not records or records[0].get("event") != "study":
        raise StorageError(f"{old} holds no study (its first record is not a study's settings)")
    header = records[0]
    if header.get("version") == VERSION:
        raise StorageError(f"{old} already holds its settings as data (version {VERSION}): Study.load reads it as is")
    if header.get("version") != 1 or not isinstance(header.get("settings"), str):
        raise StorageError(f"{old}: a study record of version {header.get('version')!r}, not nasjax 0.2's (1)")
    if not trust:
        raise StorageError(f"{old} keeps its settings as a pickle, and unpickling runs code from the file; "
                           "pass --trust if the file is yours (or from someone you trust)")  # fmt: skip
    settings = pickle.loads(base64.b64decode(header["settings"]))  # the user vouched for the file (--trust)
    first = settings_record(header["kind"], settings)  # before NEW is created: a setting with no JSON form
    target = open_storage(new)
    try:
        if target.records():
            raise StorageError(f"{new} already holds a study; give NEW the path of a new file")
        target.append(first)
        for record in records[1:]:
            target.append(record)
    finally:
        target.close()
    return len(records)


def main(argv):
    if len(argv) != 3:
        raise app.UsageError("give the old and the new study file: python -m scripts.migrate_journal OLD NEW --trust")
    try:
        n = migrate(argv[1], argv[2], trust=_TRUST.value)
    except StorageError as e:
        sys.stderr.write(f"\nstorage error: {e}\n")
        return 2
    print(f"{argv[2]}: {n} records, the settings as data; continue it with Study.load({argv[2]!r})")
    return 0


if __name__ == "__main__":
    from nas.experiment import cli

    cli.run(main)
