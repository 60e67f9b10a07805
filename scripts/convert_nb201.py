"""Converts NATS-Bench's own NAS-Bench-201 release into the test-accuracy CSV the nb201 benchmarks read.

    python -m scripts.convert_nb201 --archive=/data/NATS-tss-v1_0-3ffb9-simple.tar

``--archive``: NATS-Bench's topology release (github.com/D-X-Y/NATS-Bench, MIT): the
``NATS-tss-v1_0-3ffb9-simple`` folder, its ``.tar`` as downloaded, or the single file
``NATS-tss-v1_0-3ffb9.pickle.pbz2``. Writes, for each of the 15,625 cells, the seed-mean 200-epoch test
accuracy on CIFAR-10, CIFAR-100 and ImageNet16-120 (``spaces.benchmarks.nats_archive``) to ``--out``,
by default the data directory's ``nb201/nats_bench_test_acc.csv``, where every config that leaves
``test_data`` empty finds it. The file is then read back by the loader as a check. ``--partial`` writes
the cells that have all three accuracies and says which cells it left out (a cell is never written with
a value that is not a number); an archive with no such cell is an error. Mistakes are one line and exit
code 2 (docs/reference/errors.md).
"""

from __future__ import annotations

from absl import flags

from nas.experiment import cli

_ARCHIVE = flags.DEFINE_string("archive", None, "NATS-tss-v1_0-3ffb9-simple folder or .tar, or the .pickle.pbz2 file.")
_OUT = flags.DEFINE_string("out", "", "CSV to write (default: the data directory's nb201/nats_bench_test_acc.csv).")
_PARTIAL = flags.DEFINE_bool("partial", False, "Write the cells present even when some of the 15,625 are missing.")
flags.mark_flags_as_required(["archive"])


def main(argv):
    if len(argv) > 1:
        raise cli.ConfigError(f"unexpected arguments {argv[1:]}; give --archive=<folder or .tar>")
    from spaces.benchmarks import nats_archive, nb201
    from spaces.benchmarks.data_files import default_path

    out = cli.output_file(_OUT.value or str(default_path("nb201_test")), "out", "nats_bench_test_acc.csv")
    rows, missing = nats_archive.read_test_accuracies(_ARCHIVE.value, partial=_PARTIAL.value)
    nats_archive.write_test_csv(rows, out)
    if len(rows) == nats_archive.NUM_CELLS:
        for dataset in nb201.TEST_COLUMNS:
            nb201.read_test_csv(out, dataset)  # what the benchmark will read: every cell, every column
    print(f"wrote {out}: {len(rows)} cells, columns {', '.join(nb201.TEST_COLUMNS.values())}")
    if missing:
        left = nats_archive.NUM_CELLS - len(rows)
        print(f"PARTIAL: {left:,} of the {nats_archive.NUM_CELLS:,} cells left out: {nats_archive.describe(missing)}; "
              "the nb201 benchmarks refuse a partial file as test data")  # fmt: skip
    return 0


if __name__ == "__main__":
    cli.run(main)
