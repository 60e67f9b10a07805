"""Converts an official NAS-Bench-101 TFRecord into the array cache that ``make_benchmark("nb101")`` reads.

    python -m scripts.convert_nb101 --tfrecord=/data/nasbench_only108.tfrecord [--out=cache.npz] [--verify_hash]

Every record's length and data CRC-32C are checked; a corrupt or truncated file
fails with the record number, byte offset and reason. Without ``--out`` the cache
is written next to the file (``nasbench_only108.nb101.npz``). Passing the
TFRecord itself as ``data_path`` converts it on first use too. A file of fewer than
the 423,624 cells is refused with its count unless ``--partial`` (the table then
loads only with ``partial=True``). Mistakes are one line and exit code 2 (docs/reference/errors.md).
"""

from __future__ import annotations

from absl import flags

from nas.experiment import cli

_TFRECORD = flags.DEFINE_string("tfrecord", None, "Official NAS-Bench-101 .tfrecord file.")
_OUT = flags.DEFINE_string("out", "", "Cache path (default: next to the TFRecord).")
_VERIFY_HASH = flags.DEFINE_bool("verify_hash", False, "Recompute every official module hash (slower).")
_PARTIAL = flags.DEFINE_bool("partial", False, "Convert a file that holds only some of the 423,624 cells.")
flags.mark_flags_as_required(["tfrecord"])


def main(argv):
    if len(argv) > 1:
        raise cli.ConfigError(f"unexpected arguments {argv[1:]}; give --tfrecord=<file> [--out=<cache.npz>]")
    from spaces.benchmarks import nb101_data

    out = cli.output_file(_OUT.value, "out", "nasbench_only108.nb101.npz") if _OUT.value else None
    nb101_data.convert(_TFRECORD.value, out, verify_hash=_VERIFY_HASH.value, partial=_PARTIAL.value)
    return 0


if __name__ == "__main__":
    cli.run(main)
