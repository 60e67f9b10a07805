"""``import nas``: the public API in one namespace, lazily; old import paths of moved modules still work."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest

import nas
from spaces import moved


def test_every_public_name_resolves_without_a_deprecated_path():
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # the front door never goes through an old path
        for name in nas.__all__:
            assert getattr(nas, name) is not None, name
    assert set(nas.__all__) <= set(dir(nas))


def test_the_front_door_names_what_an_optuna_user_looks_for():
    wanted = {"create_study", "load_study", "Study", "Trial", "TrialPruned", "Float", "Int", "Categorical",
              "ASHAPruner", "HyperbandPruner", "available_searchers", "make_searcher", "make_search",
              "run_chunked", "make_benchmark", "register_benchmark", "TabularBenchmark"}  # fmt: skip
    assert wanted <= set(nas.__all__)
    assert "regularized_evolution" in nas.available_searchers()


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'Studdy'"):
        nas.Studdy  # noqa: B018


def test_import_nas_imports_no_jax():
    """The names resolve when first used: ``import nas`` alone loads neither JAX nor the tuner."""
    code = "import sys, nas; print('jax' in sys.modules, 'nas.host' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_a_study_from_the_front_door():
    study = nas.create_study({"lr": nas.Float(1e-4, 1e-1, log=True), "layers": nas.Int(1, 4)},
                             searcher="random_search", direction="minimize", max_queries=8, seed=0)  # fmt: skip
    study.optimize(lambda p: (p["lr"] - 0.01) ** 2 + 0.01 * p["layers"])
    assert isinstance(study, nas.Study) and len(study.trials) == 8
    assert study.best_value == min(t.value for t in study.trials)


@pytest.mark.parametrize("old", sorted(moved.MOVED))
def test_an_old_module_path_imports_the_new_module_with_a_warning(old):
    new = moved.new_path(old)
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {new}: import {new} instead"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert module.__name__ == new and module.__spec__.name == new  # the new module keeps its own identity
