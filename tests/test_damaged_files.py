"""A damaged file that is not the study's own (a trial's training checkpoint, TNAS's meta-trained parameters, the
NATS-Bench archive, a run's checkpoint and histories) fails with one line that names it and what is wrong with it,
never with a bare ``BadZipFile``, ``EOFError`` or ``ReadError``. Each file here is a real one, saved and then
damaged: emptied, cut short, its first bytes or an array's header garbled."""

import bz2
import os
import re
import tarfile
import zipfile

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nas.engine import checkpoint
from nas.engine.checkpoint import CheckpointError
from nas.host.study import Study
from spaces.benchmarks import nats_archive
from spaces.data_files import npz_arrays
from spaces.files import DataError
from spaces.training_state import latest_state, load_state, save_state
from surrogates.meta_params import load_params, save_params
from tests.mf_tables import BUDGETS, SPACE
from tests.test_data_files import build_archive
from tests.test_loader_errors import MODEL

STATE = {"params": jnp.arange(12, dtype=jnp.float32).reshape(3, 4), "opt": (jnp.ones(5), jnp.int32(7))}


def empty(data: bytes) -> bytes:
    return b""


def cut_in_half(data: bytes) -> bytes:
    return data[: len(data) // 2]


def cut_at_the_end(data: bytes) -> bytes:
    return data[:-30]  # only the zip directory's end record is lost


def garbled_start(data: bytes) -> bytes:
    return b"\x00GARBLED" + data[8:]


def garbled_array_header(data: bytes) -> bytes:
    i = data.index(b"\x93NUMPY")  # the first array's .npy header, inside the zip (its CRC no longer matches)
    return data[: i + 10] + b"{'descr': 'zz" + data[i + 23 :]


DAMAGES = [empty, cut_in_half, cut_at_the_end, garbled_start, garbled_array_header]
WHAT = {
    empty: "empty (0 bytes)",
    cut_in_half: "cut short",
    cut_at_the_end: "cut short",
    garbled_start: "not an .npz archive",
    garbled_array_header: "is damaged",
}


def damage(path, how) -> str:
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(how(data))
    return str(path)


def one_line(e) -> str:
    msg = str(e.value)
    assert "\n" not in msg, msg
    return msg


def rezip(src, dst, change) -> str:
    """``src``'s members written to ``dst`` after ``change(name, bytes)``: a damage that keeps the zip sound."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for name in zin.namelist():
            zout.writestr(name, change(name, zin.read(name)))
    return str(dst)


@pytest.mark.parametrize("how", DAMAGES, ids=lambda f: f.__name__)
def test_a_damaged_parent_checkpoint_names_the_file_and_the_fix(how, tmp_path):
    parent = str(tmp_path / "trial_00003")
    path = damage(save_state(parent, STATE, {"step": 4}), how)
    with pytest.raises(DataError) as e:  # what a promotion does: its own folder first, then its parent's
        latest_state([str(tmp_path / "trial_00009"), parent], STATE, lambda meta: True)
    msg = one_line(e)
    assert msg.startswith(f"{path}: not a readable training checkpoint") and WHAT[how] in msg, msg
    assert msg.endswith("delete it to train from the start"), msg


def test_a_checkpoint_that_is_not_a_training_state_names_what_it_lacks(tmp_path):
    folder = tmp_path / "t"
    path = save_state(str(folder), STATE, {"step": 4})
    arrays = dict(np.load(path))
    np.savez(path, **{k: v for k, v in arrays.items() if k != "meta"})
    with pytest.raises(DataError, match=r"state.npz: not a readable training checkpoint, lacks its 'meta' record"):
        load_state(str(folder), STATE)
    np.savez(path, **{**arrays, "meta": np.asarray("[4]")})
    with pytest.raises(DataError, match=r"its 'meta' record is a list, not a JSON object"):
        load_state(str(folder), STATE)
    np.savez(path, **{k: v for k, v in arrays.items() if k != "leaf_0002"})
    with pytest.raises(DataError, match=r"state.npz: holds 2 leaves, the training's state has 3; it belongs to anoth"):
        load_state(str(folder), STATE)
    save_state(str(folder), STATE, {"step": 4})  # the sound file still loads, bit for bit
    state, meta = load_state(str(folder), STATE)
    assert meta == {"step": 4} and all(
        np.array_equal(a, b) for a, b in zip(jax.tree.leaves(state), jax.tree.leaves(STATE))
    )


def test_a_study_whose_promotion_finds_its_parent_checkpoint_cut_short_names_the_file(tmp_path):
    study = Study(SPACE, "successive_halving", direction="minimize", seed=0, max_queries=4, fidelities=BUDGETS,
                  directory=str(tmp_path / "study"))  # fmt: skip

    def training(trial):
        found = latest_state([trial.checkpoint_dir, trial.parent_checkpoint_dir], STATE, lambda meta: True)
        path = save_state(trial.checkpoint_dir, STATE, {"budget": trial.budget})
        damage(path, cut_in_half)  # as a copy cut short would leave it (a write of the study's is atomic)
        return float(sum(trial.tokens)) + (found is not None)

    with pytest.raises(DataError) as e:
        study.optimize(training)
    msg = one_line(e)
    promoted = [t for t in study.trials if t.parent is not None]
    assert promoted and msg.startswith(os.path.join(promoted[0].parent_checkpoint_dir, "state.npz") + ": "), msg
    assert "cut short" in msg and "delete it to train from the start" in msg, msg


@pytest.fixture(scope="module")
def tnas_file(tmp_path_factory):
    """A TNAS parameters file as ``scripts.meta_train`` writes it (a small model; the reader is the same)."""
    path = str(tmp_path_factory.mktemp("tnas") / "tnas_params.npz")
    w = {"kernel": {"log_ls": np.float32(0.0)}, "net": {"dense": np.ones((3, 4), np.float32)}}
    save_params(path, w, MODEL, {"outer_steps": 0}, np.zeros((2, 3), np.int32), 0)
    return path


@pytest.mark.parametrize("how", DAMAGES, ids=lambda f: f.__name__)
def test_a_damaged_tnas_parameters_file_names_the_file_and_how_to_write_it(how, tnas_file, tmp_path):
    path = str(tmp_path / "tnas_params.npz")
    with open(tnas_file, "rb") as f, open(path, "wb") as g:
        g.write(f.read())
    damage(path, how)
    with pytest.raises(DataError) as e:
        load_params(path)
    msg = one_line(e)
    assert msg.startswith(f"{path}: ") and WHAT[how] in msg and "scripts.meta_train" in msg, msg


@pytest.mark.parametrize(
    "change, what",
    [
        (lambda name, b: b.replace(b"'descr': '<f4'", b"'descr': 'xx4'"), r"descr is not a valid dtype descriptor"),
        (lambda name, b: b[:8] + b"\xff\xff" + b[10:], r"EOF: reading array header"),
        (lambda name, b: b.replace(b"(3, 4)", b"(3, 9)"), r"EOF: reading array data"),
        (lambda name, b: b[:-5], r"EOF: reading array data"),
    ],
    ids=["dtype", "header_length", "shape", "data_cut"],
)
def test_a_tnas_array_header_damaged_inside_a_sound_zip_names_the_array(change, what, tnas_file, tmp_path):
    path = rezip(tnas_file, tmp_path / "tnas_params.npz", lambda n, b: change(n, b) if n == "w/net/dense.npy" else b)
    with pytest.raises(DataError, match=rf"tnas_params.npz: its array 'w/net/dense' is damaged \(ValueError: {what}"):
        load_params(path)


@pytest.mark.parametrize("how", DAMAGES, ids=lambda f: f.__name__)
def test_a_damaged_run_checkpoint_is_a_checkpoint_error_naming_the_file(how, tmp_path):
    path = str(tmp_path / "ckpt.npz")
    checkpoint.save(path, STATE, "fingerprint")
    damage(path, how)
    with pytest.raises(CheckpointError) as e:
        checkpoint.load(path, STATE, "fingerprint")
    msg = one_line(e)
    assert msg.startswith(f"checkpoint {path} is unreadable (") and WHAT[how] in msg and "delete" in msg, msg


def test_npz_arrays_reads_a_sound_file_whole(tmp_path):
    path = str(tmp_path / "a.npz")
    np.savez(path, x=np.arange(3), y=np.asarray("text"))
    arrays = npz_arrays(path)
    assert sorted(arrays) == ["x", "y"] and arrays["x"].tolist() == [0, 1, 2] and str(arrays["y"]) == "text"
    np.savez(path)  # an archive of no array is sound too
    assert npz_arrays(path) == {}


@pytest.fixture(scope="module")
def nats_tar(tmp_path_factory):
    """A NATS-tss-v1_0-3ffb9-simple.tar of three cells, as the release is laid out."""
    root = tmp_path_factory.mktemp("nats")
    folder = str(root / "NATS-tss-v1_0-3ffb9-simple")
    build_archive(folder)
    path = str(root / "NATS-tss-v1_0-3ffb9-simple.tar")
    with tarfile.open(path, "w") as tar:
        tar.add(folder, arcname="NATS-tss-v1_0-3ffb9-simple")
    return path


def members_end(path) -> list[int]:
    """The byte offset where each member's data ends (a cut there leaves only whole members)."""
    with tarfile.open(path) as tar:
        return [m.offset_data + -(-m.size // tarfile.BLOCKSIZE) * tarfile.BLOCKSIZE for m in tar if m.isfile()]


def test_a_sound_nats_tar_reads_and_a_truncated_one_names_the_file(nats_tar, tmp_path):
    assert len(nats_archive.archive_test_accuracies(nats_tar, partial=True)) == 3
    data = open(nats_tar, "rb").read()
    ends = members_end(nats_tar)
    cuts = {
        "in_a_member": (len(data) // 3, r"a tar archive cut short or damaged \(ReadError: unexpected end of data\)"),
        "after_a_member": (ends[1], r"a tar archive cut short \(it stops after a member"),
        "in_the_first_header": (300, r"not a readable tar archive \(300 bytes: cut short or another format\)"),
        "empty": (0, r"empty"),
    }
    for name, (size, what) in cuts.items():
        path = str(tmp_path / f"{name}.tar")
        with open(path, "wb") as f:
            f.write(data[:size])
        with pytest.raises(DataError) as e:
            nats_archive.archive_test_accuracies(path, partial=True)
        msg = one_line(e)
        assert msg.startswith(f"{path}: ") and "NATS-tss-v1_0-3ffb9-simple.tar again" in msg, (name, msg)
        assert re.search(what, msg), (name, msg)


@pytest.mark.parametrize("how", [empty, cut_in_half, garbled_start], ids=lambda f: f.__name__)
def test_a_damaged_nats_member_file_names_the_file(how, tmp_path):
    folder = str(tmp_path / "simple")
    build_archive(folder)
    path = damage(os.path.join(folder, "000011.pickle.pbz2"), how)
    with pytest.raises(DataError) as e:
        nats_archive.archive_test_accuracies(folder, partial=True)
    msg = one_line(e)
    assert msg.startswith(f"{path}: ") and ("empty" if how is empty else "not a bz2-compressed pickle") in msg, msg


def test_a_garbled_pickle_inside_the_bz2_stream_names_the_file(tmp_path):
    path = str(tmp_path / "NATS-tss-v1_0-3ffb9.pickle.pbz2")
    with open(path, "wb") as f:
        f.write(bz2.compress(b"\x80\x05\x95\xff\xff\xff\xff\xff\xff\xff\xffgarbage"))  # a frame of 2**64 bytes
    with pytest.raises(DataError, match=r"pickle.pbz2: not a bz2-compressed pickle of NATS-Bench \(OverflowError"):
        nats_archive.read_archive(path)
