"""Throughput figures for the NAS-Bench-101 data layer (run from the repo root).

    python -m scripts.bench.bench_nb101

1. canonical index: jit(vmap(SPACE.string_id)) on 100,000 uniform valid cells;
2. TFRecord framing + CRC-32C (frame_records) on a ~200 MB file made of
   official-format records of the 1,000 real data-1k cells, repeated;
3. full conversion (framing, CRC, JSON, base64, protobuf, canonical codes,
   cache) of a 12,000-record file (1,000 cells x 4 budgets x 3 repeats).
The records carry data-1k validation numbers; they exist to time the reader.
"""

import json
import os
import tempfile
import time

import jax
import numpy as np

from spaces import nb101
from spaces.benchmarks import nb101_data
from spaces.benchmarks.nb101_tfrecord import encode_model_metrics, frame_records, make_record, write_tfrecord

S = nb101.SPACE
f = jax.jit(jax.vmap(S.string_id))
x = jax.jit(jax.vmap(S.sample))(jax.random.split(jax.random.PRNGKey(0), 100_000))
f(x).block_until_ready()
ts = []
for _ in range(5):
    t = time.perf_counter()
    f(x).block_until_ready()
    ts.append(time.perf_counter() - t)
print(f"canonical index: {100_000 / min(ts):,.0f} cells/s (best of 5), {100_000 / np.median(ts):,.0f} median")

d = json.load(open(os.environ.get("DATA1K", "../shared/data/nb101/data-1k.json")))
names = {-1: "input", -2: "output", 0: nb101.OPS[0], 1: nb101.OPS[1], 2: nb101.OPS[2]}
recs = []
for i in range(1000):
    ops = d["operations"][i]
    k = ops.index(-2) + 1
    m = np.asarray(d["adjacency"][i], int)[:k, :k]
    for e in (4, 12, 36, 108):
        v, tt = d[f"{e}_final_validation_accuracy"][i], d["final_training_time"][i]
        for _ in range(3):
            ev = [
                {
                    "current_epoch": float(c),
                    "training_time": tt,
                    "train_accuracy": v,
                    "validation_accuracy": v,
                    "test_accuracy": v,
                }
                for c in (0, e / 2, e)
            ]
            recs.append(
                make_record(
                    d["key"][i],
                    e,
                    m,
                    [names[o] for o in ops[:k]],
                    encode_model_metrics(ev, d["trainable_parameters"][i], tt),
                )
            )
with tempfile.TemporaryDirectory() as tmp:
    small = os.path.join(tmp, "small.tfrecord")
    write_tfrecord(small, recs)
    raw = open(small, "rb").read()
    big = os.path.join(tmp, "big.tfrecord")
    with open(big, "wb") as fh:
        for _ in range(40):
            fh.write(raw)
    buf = np.memmap(big, np.uint8, mode="r")
    t = time.perf_counter()
    offs, _ = frame_records(buf, big)
    dt = time.perf_counter() - t
    print(
        f"framing + CRC-32C: {len(buf) / 1e6:.0f} MB, {len(offs):,} records in {dt:.2f} s = "
        f"{len(buf) / 1e6 / dt:.0f} MB/s"
    )
    t = time.perf_counter()
    nb101_data.parse_records(small)
    dt = time.perf_counter() - t
    print(
        f"parse (framing, CRC, JSON, base64, protobuf): {len(recs):,} records in {dt:.2f} s = "
        f"{len(recs) / dt:,.0f} records/s, {len(raw) / 1e6 / dt:.1f} MB/s"
    )
    nb101_data.convert(small, os.path.join(tmp, "c.npz"))  # compiles string_id for the batch size
    t = time.perf_counter()
    nb101_data.convert(small, os.path.join(tmp, "c.npz"))
    dt = time.perf_counter() - t
    print(
        f"full conversion (compiled): {len(raw) / 1e6:.1f} MB, {len(recs):,} records in {dt:.2f} s = "
        f"{len(raw) / 1e6 / dt:.1f} MB/s, {len(recs) / dt:,.0f} records/s"
    )
