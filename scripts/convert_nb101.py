"""Converts an official NAS-Bench-101 TFRecord into the array cache that ``make_benchmark("nb101")`` reads.

    python -m scripts.convert_nb101 --tfrecord=/data/nasbench_only108.tfrecord [--out=cache.npz] [--verify_hash]

Every record's length and data CRC-32C are checked; a corrupt or truncated file
fails with the record number, byte offset and reason. Without ``--out`` the cache
is written next to the file (``nasbench_only108.nb101.npz``). Passing the
TFRecord itself as ``data_path`` converts it on first use too.
"""

from __future__ import annotations

from absl import app, flags

from spaces.benchmarks import nb101_data

_TFRECORD = flags.DEFINE_string("tfrecord", None, "Official NAS-Bench-101 .tfrecord file.")
_OUT = flags.DEFINE_string("out", "", "Cache path (default: next to the TFRecord).")
_VERIFY_HASH = flags.DEFINE_bool("verify_hash", False, "Recompute every official module hash (slower).")
flags.mark_flags_as_required(["tfrecord"])


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {argv[1:]}")
    nb101_data.convert(_TFRECORD.value, _OUT.value or None, verify_hash=_VERIFY_HASH.value)


if __name__ == "__main__":
    app.run(main)
