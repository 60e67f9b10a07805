"""The official NAS-Bench-101 file format without TensorFlow: TFRecord framing, CRC-32C, protobuf.

- TFRecord framing: ``u64 length | u32 masked crc32c(length) | data |
  u32 masked crc32c(data)``, little-endian; ``masked(c) = rotr(c, 15) +
  0xa282ead8``. CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) is
  computed table-driven with numpy, 4 bytes per step ("slicing-by-4") and
  vectorized across records (records sorted by length, so the records still
  being processed are always a prefix).
- data: JSON ``[module_hash, epochs, adjacency "0110..." (row-major, n*n),
  ops "input,conv3x3-bn-relu,...,output", base64(ModelMetrics)]``.
- ``ModelMetrics`` protobuf (``nasbench/lib/model_metrics.proto``):
  ``repeated EvaluationData evaluation_data = 1; int32 trainable_parameters
  = 2; double total_time = 3`` and ``EvaluationData{double current_epoch = 1;
  double training_time = 2; double train_accuracy = 3; double
  validation_accuracy = 4; double test_accuracy = 5; string checkpoint_path =
  6}``, decoded with a minimal wire-format reader.

Writers (``write_tfrecord``, ``encode_model_metrics``, ``make_record``) exist
for test fixtures.
"""

from __future__ import annotations

import array
import base64
import json
import struct
import sys

import numpy as np

from spaces.files import DataError

_MASK_DELTA = 0xA282EAD8
_POLY = 0x82F63B78


# ---- CRC-32C ---------------------------------------------------------------------------------
def _crc_tables() -> np.ndarray:
    t = np.zeros((4, 256), np.uint32)
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ (_POLY if c & 1 else 0)
        t[0, i] = c
    for k in range(1, 4):
        t[k] = (t[k - 1] >> 8) ^ t[0][t[k - 1] & 0xFF]
    return t


_T = _crc_tables()
_LITTLE = sys.byteorder == "little"


def crc32c(data: bytes) -> int:
    """CRC-32C of one byte string (vectorized path on a single record)."""
    buf = np.frombuffer(data, np.uint8)
    return int(crc32c_many(buf, np.zeros(1, np.int64), np.asarray([len(buf)], np.int64))[0])


def crc32c_many(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """uint32[R]: CRC-32C of ``buf[starts[r] : starts[r] + lengths[r]]`` for every r."""
    out = np.zeros(len(starts), np.uint32)
    t0, t1, t2, t3 = _T
    for align in range(4):  # a uint32 view per alignment: one gather reads 4 bytes
        sel = np.flatnonzero(starts % 4 == align)
        if sel.size == 0:
            continue
        sel = sel[np.argsort(-lengths[sel], kind="stable")]
        st, ln = starts[sel], lengths[sel]
        words = np.frombuffer(buf, np.dtype("<u4"), count=(len(buf) - align) // 4, offset=align)
        base = (st - align) // 4
        crc = np.full(sel.size, 0xFFFFFFFF, np.uint32)
        nwords = ln // 4
        for k in range(int(nwords.max(initial=0))):
            n = int(np.searchsorted(-nwords, -k, side="left"))  # records with > k words (sorted desc)
            c = crc[:n] ^ words[base[:n] + k]
            if _LITTLE:  # the bytes of c as uint8 columns: no shifts and masks
                cb = c.view(np.uint8).reshape(n, 4)
                crc[:n] = t3[cb[:, 0]] ^ t2[cb[:, 1]] ^ t1[cb[:, 2]] ^ t0[cb[:, 3]]
            else:
                crc[:n] = t3[c & 0xFF] ^ t2[(c >> 8) & 0xFF] ^ t1[(c >> 16) & 0xFF] ^ t0[c >> 24]
        for k in range(3):  # tail bytes
            idx = np.flatnonzero(ln % 4 > k)
            if idx.size:
                b = buf[st[idx] + 4 * nwords[idx] + k].astype(np.uint32)
                c = crc[idx]
                crc[idx] = t0[(c ^ b) & 0xFF] ^ (c >> 8)
        out[sel] = crc ^ np.uint32(0xFFFFFFFF)
    return out


def mask_crc(crc: np.ndarray | int) -> np.ndarray:
    c = np.asarray(crc, np.uint64)
    return ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + _MASK_DELTA) & 0xFFFFFFFF


# ---- TFRecord framing ---------------------------------------------------------------------------
def write_tfrecord(path: str, records: list[bytes]) -> None:
    """Writes records in the TFRecord format (used for test fixtures)."""
    with open(path, "wb") as f:
        for rec in records:
            head = struct.pack("<Q", len(rec))
            f.write(head + struct.pack("<I", int(mask_crc(crc32c(head)))))
            f.write(rec + struct.pack("<I", int(mask_crc(crc32c(rec)))))


def frame_records(buf: np.ndarray, path: str = "<buffer>") -> tuple[np.ndarray, np.ndarray]:
    """(data offsets, data lengths) of every record, all CRCs checked; errors name record and offset."""
    size = len(buf)
    mv = memoryview(buf)
    heads, lens = array.array("q"), array.array("q")  # 8 bytes per entry: the full file has 5M records
    off, problem, bad_rec = 0, None, -1
    while off < size:
        if off + 12 > size:
            problem, bad_rec = f"truncated header ({size - off} of 12 bytes) (truncated file)", len(heads)
            break
        (n,) = struct.unpack_from("<Q", mv, off)
        if off + 16 + n > size:
            # a length past the end: trust it only if its own CRC says it is the length that was written
            (stored_crc,) = struct.unpack_from("<I", mv, off + 8)
            if int(mask_crc(crc32c(bytes(mv[off : off + 8])))) != stored_crc:
                what = "not a TFRecord file" if off == 0 else "corrupt file"
                problem = f"length CRC mismatch ({what})"
            else:
                problem = f"truncated record (needs {16 + n} bytes, {size - off} left) (truncated file)"
            bad_rec = len(heads)
            break
        heads.append(off)
        lens.append(n)
        off += 16 + n
    heads = np.asarray(heads, np.int64)
    lens = np.asarray(lens, np.int64)
    stored = np.frombuffer(buf, np.uint8)
    # length CRCs first: a corrupt length explains any framing problem after it
    got = mask_crc(crc32c_many(stored, heads, np.full(len(heads), 8, np.int64)))
    want = _u32_at(stored, heads + 8)
    bad = np.flatnonzero(got != want)
    if bad.size:
        r = int(bad[0])
        what = "not a TFRecord file" if r == 0 else "corrupt file"
        raise DataError(f"{path}: record {r} at byte offset {heads[r]}: length CRC mismatch ({what})")
    if problem is not None:
        raise DataError(f"{path}: record {bad_rec} at byte offset {off}: {problem}")
    got = mask_crc(crc32c_many(stored, heads + 12, lens))
    want = _u32_at(stored, heads + 12 + lens)
    bad = np.flatnonzero(got != want)
    if bad.size:
        r = int(bad[0])
        raise DataError(f"{path}: record {r} at byte offset {heads[r]}: data CRC mismatch (corrupt file)")
    return heads + 12, lens


def _u32_at(buf: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    b = buf[offsets[:, None] + np.arange(4)].astype(np.uint64)
    return b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16) | (b[:, 3] << 24)


# ---- protobuf wire format ---------------------------------------------------------------------------
_DOUBLE = struct.Struct("<d")
_FLOAT = struct.Struct("<f")


def _varint(b: bytes, i: int, end: int) -> tuple[int, int]:
    x, shift = 0, 0
    while True:
        if i >= end or shift > 63:
            raise ValueError("truncated or overlong varint")
        c = b[i]
        i += 1
        x |= (c & 0x7F) << shift
        if c < 0x80:
            return x, i
        shift += 7


def _fields(b: bytes, i: int, end: int) -> list[tuple[int, int, object]]:
    """(field number, wire type, value) of the message ``b[i:end]``; length-delimited values are
    ``(start, stop)`` bounds into ``b`` (no copies). Inlined one-byte varints: ~1.3M messages."""
    out = []
    while i < end:
        tag = b[i]
        i += 1
        if tag & 0x80:
            tag, i = _varint(b, i - 1, end)
        num, wt = tag >> 3, tag & 7
        if num == 0:
            raise ValueError("field number 0")
        if wt == 1:
            if i + 8 > end:
                raise ValueError(f"truncated 64-bit field {num}")
            out.append((num, 1, _DOUBLE.unpack_from(b, i)[0]))
            i += 8
        elif wt == 2:
            n, i = _varint(b, i, end)
            if i + n > end:
                raise ValueError(f"truncated length-delimited field {num}")
            out.append((num, 2, (i, i + n)))
            i += n
        elif wt == 0:
            val, i = _varint(b, i, end)
            out.append((num, 0, val))
        elif wt == 5:
            if i + 4 > end:
                raise ValueError(f"truncated 32-bit field {num}")
            out.append((num, 5, _FLOAT.unpack_from(b, i)[0]))
            i += 4
        else:
            raise ValueError(f"unsupported wire type {wt} (field {num})")
    return out


_EVAL_FIELDS = {
    1: "current_epoch",
    2: "training_time",
    3: "train_accuracy",
    4: "validation_accuracy",
    5: "test_accuracy",
}


def decode_model_metrics(b: bytes, final_only: bool = False) -> dict:
    """``ModelMetrics`` bytes -> {"evaluation_data": [dict], "trainable_parameters", "total_time"}.

    ``final_only`` decodes only the last evaluation (the end of training; 3x faster).
    """
    out = {"evaluation_data": [], "trainable_parameters": 0, "total_time": 0.0}
    top = _fields(b, 0, len(b))
    last = max((k for k, f in enumerate(top) if f[0] == 1 and f[1] == 2), default=-1)
    for k, (num, wt, val) in enumerate(top):
        if num == 1 and wt == 2:
            if final_only and k != last:
                continue
            ev = {}
            for n2, w2, v2 in _fields(b, *val):
                if w2 == 1 and n2 in _EVAL_FIELDS:
                    ev[_EVAL_FIELDS[n2]] = v2
                elif n2 == 6 and w2 == 2:
                    ev["checkpoint_path"] = b[v2[0] : v2[1]].decode("utf-8", "replace")
            out["evaluation_data"].append(ev)
        elif num == 2 and wt in (0, 1):  # int32 in the official .proto; accept a double too
            out["trainable_parameters"] = int(val) if wt == 0 else int(round(val))
        elif num == 3 and wt == 1:
            out["total_time"] = val
        elif num in (1, 2, 3):
            raise ValueError(f"ModelMetrics field {num} has wire type {wt}")
    return out


def encode_model_metrics(evaluations: list[dict], trainable_parameters: int, total_time: float) -> bytes:
    """Inverse of ``decode_model_metrics`` (test fixtures)."""

    def varint(x: int) -> bytes:
        out = bytearray()
        while True:
            out.append((x & 0x7F) | (0x80 if x > 0x7F else 0))
            x >>= 7
            if not out[-1] & 0x80:
                return bytes(out)

    msg = b""
    for ev in evaluations:
        body = b"".join(bytes([(n << 3) | 1]) + struct.pack("<d", ev[k]) for n, k in _EVAL_FIELDS.items() if k in ev)
        path = ev.get("checkpoint_path", "").encode()
        body += bytes([(6 << 3) | 2]) + varint(len(path)) + path
        msg += bytes([(1 << 3) | 2]) + varint(len(body)) + body
    return (
        msg
        + bytes([2 << 3])
        + varint(int(trainable_parameters))
        + bytes([(3 << 3) | 1])
        + struct.pack("<d", total_time)
    )


def make_record(module_hash: str, epochs: int, matrix: np.ndarray, ops: list[str], metrics: bytes) -> bytes:
    """One official JSON row (test fixtures)."""
    adj = "".join(str(int(x)) for x in np.asarray(matrix).reshape(-1))
    row = [module_hash, int(epochs), adj, ",".join(ops), base64.b64encode(metrics).decode()]
    return json.dumps(row).encode()
