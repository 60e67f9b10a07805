"""NAS-Bench-101 data layer: CRC-32C, TFRecord framing, protobuf, conversion, loaders.

Fixtures are small TFRecord files in the official format built from real
cells of ../shared/data/nb101/data-1k.json (their real hash and structure).
Metric values in the fixtures are data-1k *validation* accuracies, training
times and parameter counts, moved between cells/repeats so that repeats
differ: they exercise the reader and are not benchmark results (data-1k has
no test accuracy; the "test" field of the fixtures is another validation
number).
"""

import json
import os
import struct

import jax
import numpy as np
import pytest

from spaces import nb101
from spaces.benchmarks import nb101_data
from spaces.benchmarks.nb101_tfrecord import (
    _T,
    crc32c,
    crc32c_many,
    decode_model_metrics,
    encode_model_metrics,
    make_record,
    write_tfrecord,
)
from spaces.benchmarks.registry import make_benchmark
from spaces.files import DataError
from tests.conftest import shared_file

S = nb101.SPACE
N_CELLS = 24
EPOCHS = (4, 12, 36, 108)


def _crc_bytewise(b: bytes) -> int:
    c = 0xFFFFFFFF
    for x in b:
        c = int(_T[0][(c ^ x) & 0xFF]) ^ (c >> 8)
    return c ^ 0xFFFFFFFF


@pytest.fixture(scope="module")
def data1k():
    with open(shared_file("nb101/data-1k.json")) as f:
        return json.load(f)


def fixture_rows(d, n=N_CELLS, epochs=EPOCHS):
    """(records, expected) for the first n cells: 3 repeats per epoch budget."""
    names = {-1: "input", -2: "output", 0: nb101.OPS[0], 1: nb101.OPS[1], 2: nb101.OPS[2]}
    records, expect = [], {}
    for i in range(n):
        ops = d["operations"][i]
        k = ops.index(-2) + 1
        matrix = np.asarray(d["adjacency"][i], int)[:k, :k]
        op_names = [names[o] for o in ops[:k]]
        for e in epochs:
            val = d[f"{e}_final_validation_accuracy"]
            for r in range(3):
                v, t = val[(i + r) % 1000], val[(i + r + 500) % 1000]
                tt = d["final_training_time"][(i + r) % 1000]
                ev = [  # start, halfway (placeholders the reader must skip), end of training
                    {"current_epoch": 0.0, "validation_accuracy": 0.1, "test_accuracy": 0.1, "training_time": 0.0},
                    {"current_epoch": e / 2, "validation_accuracy": 0.5, "test_accuracy": 0.5, "training_time": 1.0},
                    {"current_epoch": float(e), "validation_accuracy": v, "test_accuracy": t, "training_time": tt},
                ]
                metrics = encode_model_metrics(ev, d["trainable_parameters"][i], 2 * tt)
                records.append(make_record(d["key"][i], e, matrix, op_names, metrics))
                expect.setdefault((i, e), []).append((v, t, tt))
    return records, expect


@pytest.fixture(scope="module")
def full_file(data1k, tmp_path_factory):
    path = tmp_path_factory.mktemp("nb101") / "nasbench_full.tfrecord"
    records, expect = fixture_rows(data1k)
    write_tfrecord(str(path), records)
    return path, expect


def test_crc32c_known_values_and_vectorized():
    assert crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value
    assert crc32c(b"") == 0 and crc32c(b"\x00" * 32) == 0x8A9136AA  # RFC 3720 B.4
    rng = np.random.default_rng(0)
    buf = rng.integers(0, 256, 6000).astype(np.uint8)
    st, ln = rng.integers(0, 5000, 200), rng.integers(0, 999, 200)
    got = crc32c_many(buf, st, ln)
    assert all(int(g) == _crc_bytewise(bytes(buf[s : s + n])) for g, s, n in zip(got, st, ln))


def test_protobuf_roundtrip_and_field_numbers():
    ev = {"current_epoch": 108.0, "training_time": 1.5, "train_accuracy": 1.0, "validation_accuracy": 0.9}
    b = encode_model_metrics([ev], 123456, 7.0)
    # field 1 (evaluation_data) is length-delimited: tag 0x0a; inside, validation_accuracy = field 4, double: 0x21
    assert b[0] == 0x0A and bytes([0x21]) + struct.pack("<d", 0.9) in b
    out = decode_model_metrics(b)
    assert out["trainable_parameters"] == 123456 and out["total_time"] == 7.0
    assert out["evaluation_data"][0]["validation_accuracy"] == 0.9 and out["evaluation_data"][0]["current_epoch"] == 108


def test_convert_load_and_query(full_file, data1k, tmp_path, monkeypatch):
    path, expect = full_file
    for convert_or_load in (lambda: nb101_data.convert(str(path), str(tmp_path / "c.npz")), lambda: make_benchmark(
            "nb101", data_path=str(path))):  # a file of some cells is not NAS-Bench-101 unless partial=True says so
        with pytest.raises(DataError, match=f"holds {N_CELLS} of the 423,624 NAS-Bench-101 cells .* partial=True"):
            convert_or_load()
    cache = nb101_data.convert(str(path), str(tmp_path / "c.npz"), verify_hash=True, partial=True)
    with np.load(cache) as z:
        assert sorted(z["hash"].astype(str).tolist()) == sorted(data1k["key"][:N_CELLS])
        assert z["epochs"].tolist() == list(EPOCHS) and np.all(np.diff(z["code"]) > 0)
    specs = [{"matrix": data1k["adjacency"][i], "ops": data1k["operations"][i]} for i in range(N_CELLS)]
    tokens = np.stack([S.from_spec(sp) for sp in specs])
    query = jax.jit(lambda b, k, t: b.query(k, t))
    ids = nb101_data.canonical_codes(tokens)
    for e in (108, 36):
        bench = nb101_data.load(cache, partial=True, protocol="mean", epochs=e)
        assert bench.size == N_CELLS and bench.has_test and bench.num_seeds == 3
        rows = np.searchsorted(np.asarray(bench.row_ids), ids)
        assert np.all(np.asarray(bench.row_ids)[rows] == ids)
        for i, r in enumerate(rows):
            np.testing.assert_allclose(np.asarray(bench.valid[r]), [x[0] * 100 for x in expect[(i, e)]], rtol=1e-5)
            np.testing.assert_allclose(float(bench.test[r]), np.mean([x[1] for x in expect[(i, e)]]) * 100, rtol=1e-5)
            np.testing.assert_allclose(float(bench.cost[r]), np.mean([x[2] for x in expect[(i, e)]]), rtol=1e-5)
    bench = nb101_data.load(cache, partial=True, protocol="mean")
    canon = np.stack([nb101.decode_code(c) for c in ids])  # other strings of the same cells
    assert np.any(canon != tokens)
    moved = np.concatenate([tokens, canon, np.zeros((1, 26), np.int32)])  # + a disconnected string
    res = query(bench, jax.random.PRNGKey(0), moved)
    want = np.asarray([np.mean([x[0] for x in expect[(i, 108)]]) for i in range(N_CELLS)]) * 100
    np.testing.assert_allclose(np.asarray(res["valid"])[:-1], np.tile(want, 2), rtol=1e-5)
    assert res["valid"][-1] == -np.inf and res["test"][-1] == -np.inf
    rnd = query(bench.with_protocol("random"), jax.random.PRNGKey(1), moved)
    for i, v in enumerate(np.asarray(rnd["valid"])[:N_CELLS]):
        assert np.isclose([x[0] * 100 for x in expect[(i, 108)]], v, rtol=1e-5).any()
    # the tfrecord path converts once next to the file, then reads the cache
    first = nb101_data.load(str(path), partial=True)
    assert (path.parent / "nasbench_full.nb101.npz").exists()
    monkeypatch.setattr(nb101_data, "convert", lambda *a, **k: pytest.fail("cache not reused"))
    again = nb101_data.load(str(path), partial=True)
    np.testing.assert_array_equal(np.asarray(first.row_ids), np.asarray(again.row_ids))
    with pytest.raises(ValueError, match="epochs"):
        nb101_data.load(cache, partial=True, epochs=200)
    # the cache is keyed by the file's content tag (size, mtime, head and tail hash): a changed tag reconverts
    converted = []
    monkeypatch.setattr(nb101_data, "convert", lambda *a, **k: converted.append(1) or pytest.fail("stop"))
    os.utime(path, ns=(0, 12345))  # same bytes, another mtime: a new tag, reconverted
    with pytest.raises(pytest.fail.Exception):
        nb101_data.load(str(path), partial=True)
    assert converted == [1]
    monkeypatch.undo()
    # a corrupt cache next to the file is rebuilt, with a warning
    (path.parent / "nasbench_full.nb101.npz").write_bytes(b"garbage")
    rebuilt = nb101_data.load(str(path), partial=True)
    np.testing.assert_array_equal(np.asarray(first.row_ids), np.asarray(rebuilt.row_ids))


def _corrupt(tmp_path, records, how):
    path = tmp_path / f"{how}.tfrecord"
    write_tfrecord(str(path), records)
    b = bytearray(path.read_bytes())
    offs = [0]
    for r in records:
        offs.append(offs[-1] + 16 + len(r))
    if how == "length_crc":
        b[offs[2] + 9] ^= 0xFF
    elif how == "length_value":
        b[offs[2]] ^= 0x40  # a wrong length: framing breaks, the length CRC names the cause
    elif how == "data_crc":
        b[offs[3] + 12 + 5] ^= 0x01
    elif how == "truncated":
        b = b[: offs[-2] + 40]
    elif how == "truncated_header":
        b = b[: offs[-1] - 16 - len(records[-1]) + 5]
    elif how == "length_high_bit":
        b[offs[2] + 7] |= 0x80  # a length >= 2**63: must never be used before its CRC is checked
    elif how == "not_tfrecord":
        b = bytearray(b"PK\x03\x04" + bytes(range(256)) * 4)
    path.write_bytes(bytes(b))
    return path


@pytest.mark.parametrize(
    "how, pattern",
    [
        ("length_crc", r"record 2 at byte offset \d+: length CRC mismatch"),
        ("length_value", r"record 2 at byte offset \d+: length CRC mismatch"),
        ("data_crc", r"record 3 at byte offset \d+: data CRC mismatch"),
        ("truncated", r"record 5 at byte offset \d+: truncated record"),
        ("truncated_header", r"record 5 at byte offset \d+: truncated header"),
        ("length_high_bit", r"record 2 at byte offset \d+: length CRC mismatch \(corrupt file\)"),
        ("not_tfrecord", r"record 0 at byte offset 0: length CRC mismatch \(not a TFRecord file\)"),
    ],
)
def test_corrupt_files_fail_with_record_and_offset(data1k, tmp_path, how, pattern):
    records = fixture_rows(data1k, n=2, epochs=(108,))[0]
    path = _corrupt(tmp_path, records, how)
    with pytest.raises(ValueError, match=pattern):
        nb101_data.parse_records(str(path))


def test_bad_payloads_fail_with_record_and_offset(data1k, tmp_path):
    records = fixture_rows(data1k, n=1, epochs=(108,))[0]
    good = records[0]
    off1 = 16 + len(good)
    cases = {
        b"not json": "bad JSON row",
        json.dumps(["h", 108, "01", "input"]).encode(): "bad JSON row",
        json.dumps(["h", 108, "0100", "input,output", "CgT/"]).encode(): "bad ModelMetrics protobuf",
        json.dumps(["h", 108, "0100", "input,output", "@@@"]).encode(): "bad ModelMetrics protobuf",
    }
    for payload, reason in cases.items():
        path = tmp_path / "bad.tfrecord"
        write_tfrecord(str(path), [good, payload])
        with pytest.raises(ValueError, match=rf"record 1 at byte offset {off1}: {reason}"):
            nb101_data.parse_records(str(path))


def test_missing_files_say_where_to_download(tmp_path):
    for p in ("", str(tmp_path / "nasbench_only108.tfrecord")):
        with pytest.raises(DataError, match="storage.googleapis.com/nasbench/nasbench_only108.tfrecord"):
            nb101_data.load(p, partial=True)
    empty = tmp_path / "empty.tfrecord"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="empty file"):
        nb101_data.load(str(empty))


def test_load_data1k(data1k):
    bench = nb101_data.load_data1k(shared_file("nb101/data-1k.json"))
    assert bench.name == "nb101/data1k" and bench.size == 1000 and not bench.has_test
    idx = np.arange(0, 1000, 37)
    tokens = np.stack([S.from_spec({"matrix": data1k["adjacency"][i], "ops": data1k["operations"][i]}) for i in idx])
    res = jax.jit(lambda b, k, t: b.query(k, t))(bench, jax.random.PRNGKey(0), tokens)
    want = np.asarray(data1k["108_final_validation_accuracy"])[idx] * 100
    np.testing.assert_allclose(np.asarray(res["valid"]), want, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(res["test"]), want, rtol=1e-5)  # no test split: test = validation
    assert np.isclose(bench.report(res["valid"][0]), 100 - want[0])


def test_conversion_checks_repeats_hashes_and_cells(data1k, tmp_path):
    records = fixture_rows(data1k, n=2, epochs=(108,))[0]
    path = tmp_path / "four.tfrecord"
    write_tfrecord(str(path), records + records[:1])  # a 4th repeat of cell 0
    with pytest.raises(ValueError, match="record 6: more than 3 repeats"):
        nb101_data.convert(str(path), str(tmp_path / "c.npz"), partial=True)
    swapped = [r.replace(data1k["key"][0].encode(), data1k["key"][5].encode()) for r in records[:3]]
    write_tfrecord(str(path), swapped)  # cell 0 stored under another cell's hash
    nb101_data.convert(str(path), str(tmp_path / "c.npz"), partial=True)  # not checked by default (fast path)
    with pytest.raises(ValueError, match="record 0: stored hash .* != official hash"):
        nb101_data.convert(str(path), str(tmp_path / "c.npz"), verify_hash=True, partial=True)
    too_many = make_record(
        "h" * 32,
        108,
        np.triu(np.ones((7, 7), int), 1),
        ["input"] + ["maxpool3x3"] * 5 + ["output"],
        encode_model_metrics([{"validation_accuracy": 0.5}], 1, 1.0),
    )  # 21 edges: invalid
    write_tfrecord(str(path), [too_many])
    with pytest.raises(ValueError, match="record 0: cell is not a valid NAS-Bench-101 cell"):
        nb101_data.convert(str(path), str(tmp_path / "c.npz"), partial=True)
    assert not list(tmp_path.glob("tmp*.npz"))  # no half-written cache left behind


def test_four_budgets_of_the_full_file_are_fidelities(full_file, data1k, tmp_path):
    """``nasbench_full``-style records (4/12/36/108 epochs, 3 repeats each): with ``fidelities`` every budget is a
    level with its own repeats, mean test accuracy and recorded training time; an only-108 file has one budget."""
    path, expect = full_file
    cache = nb101_data.convert(str(path), str(tmp_path / "c.npz"), partial=True)
    table = make_benchmark("nb101", data_path=cache, fidelities=EPOCHS, partial=True)
    assert table.name == "nb101" and table.fidelities == tuple(map(float, EPOCHS)) and not table.continues
    tokens = np.stack([S.from_spec({"matrix": data1k["adjacency"][i], "ops": data1k["operations"][i]})
                       for i in range(N_CELLS)])  # fmt: skip
    query = jax.jit(lambda b, k, t, f: b.query(k, t, f))
    for f, e in enumerate(EPOCHS):
        single = nb101_data.load(cache, partial=True, epochs=e)  # each level is the one-budget table of its epochs
        for name in ("valid", "test", "cost", "row_ids"):
            np.testing.assert_array_equal(np.asarray(getattr(table.level(f), name)), np.asarray(getattr(single, name)))
        res = query(table, jax.random.PRNGKey(0), tokens, np.full(N_CELLS, f))
        runs = np.asarray([expect[(i, e)] for i in range(N_CELLS)])  # [cell, repeat, (valid, test, time)]
        np.testing.assert_allclose(np.asarray(res["valid"]), runs[:, :, 0].mean(1) * 100, rtol=1e-5)
        np.testing.assert_allclose(np.asarray(res["test"]), runs[:, :, 1].mean(1) * 100, rtol=1e-5)
        np.testing.assert_allclose(np.asarray(res["cost"]), runs[:, :, 2].mean(1), rtol=1e-5)
    table = nb101_data.load(str(path), partial=True, fidelities=(12, 108))  # the TFRecord's cache
    assert table.fidelities == (12.0, 108.0)
    only108 = tmp_path / "only108.tfrecord"
    write_tfrecord(str(only108), fixture_rows(data1k, n=2, epochs=(108,))[0])
    with pytest.raises(DataError, match=r"has epochs \[108\], not \[4, 12, 36\]"):
        nb101_data.load(str(only108), fidelities=EPOCHS, partial=True)
