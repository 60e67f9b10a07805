"""Meta-training never writes a diverged model, and ``scripts.meta_train`` refuses bad settings and a workdir
meta-trained with other settings in one line (exit code 2). TNAS refusing an unfinished or non-finite
parameters file is walked with the other loaders in tests/test_loader_errors.py."""

import os
import subprocess
import sys

import numpy as np
import pytest

from surrogates.deep_kernel import DeepKernelConfig
from surrogates.meta_params import save_params
from surrogates.meta_training import MetaTrainingError, meta_train
from surrogates.reptile import ReptileConfig
from tests.test_tnas_suites import TINY, SumTask, tiny

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_a_diverging_meta_training_writes_nothing(tmp_path):
    path = tmp_path / "tnas_params.npz"
    rep = ReptileConfig(
        inner_steps=2, batch_size=8, set_min=3, set_max=8, inner_lr=1e3, inner_optimizer="sgd", outer_lr=1.0
    )  # fmt: skip  (a step size far too large: the loss is NaN at once)
    with pytest.raises(MetaTrainingError, match=r"diverged by outer step 2: .* \(above 100 or not finite; nothing"):
        meta_train(str(path), TINY, {"b": SumTask(1), "c": SumTask(2)}, "a", ("a", "b", "c"), tiny(9), rep, 4, 2,
                   seed=0, progress=False)  # fmt: skip
    assert not path.exists()


def meta_train_cli(workdir, *overrides):
    cmd = [sys.executable, "-m", "scripts.meta_train", "--config", "configs/nb201_tnas.py:cifar10",
           "--workdir", str(workdir), "--noprogress", *overrides]  # fmt: skip
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("config error: "), r.stderr[-2000:]
    return lines[0]


def test_meta_train_refuses_bad_settings_and_another_runs_workdir_in_one_line(tmp_path):
    line = meta_train_cli(tmp_path / "a", "--config.meta.inner_lr=-0.001")
    assert "inner_lr must be a finite number > 0, got -0.001" in line and not (tmp_path / "a").exists()
    # a finished workdir of another seed: refused before anything is computed, and left as it was
    params = tmp_path / "b" / "tnas_params.npz"
    params.parent.mkdir()
    meta = {"space": "nb201", "target": "nb201/cifar10", "sources": ["nb201/cifar100", "nb201/imagenet16"],
            "seed": 1, "outer_steps": 300, "reptile": {}}  # fmt: skip
    save_params(str(params), {"kernel": {"log_ls": np.float32(0)}}, DeepKernelConfig(), meta, np.zeros((5, 6)), 300)
    before = params.read_bytes()
    line = meta_train_cli(tmp_path / "b")
    assert "was meta-trained with other settings (seed, reptile differ)" in line and params.read_bytes() == before
