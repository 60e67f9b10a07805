"""Every experiment config in configs/ loads and passes validation (names, options, searcher kwargs).

A typo in a config (an unknown searcher, option or benchmark) should fail here, not an hour into a run.
"""

import importlib
import pathlib

import pytest

from nas.experiment.run import validate_config

CONFIG_DIR = pathlib.Path(__file__).parent.parent / "configs"
CONFIGS = sorted(p.stem for p in CONFIG_DIR.glob("*.py") if p.stem != "__init__")
CONFIGS += sorted(f"paper.{p.stem}" for p in (CONFIG_DIR / "paper").glob("*.py") if p.stem != "__init__")


@pytest.mark.parametrize("name", CONFIGS)
def test_config_loads_and_validates(name):
    module = importlib.import_module(f"configs.{name}")
    config = module.get_config()
    assert module.__doc__ and "python -m scripts." in module.__doc__, f"configs/{name}.py: docstring lacks its command"
    if "task" in config:  # a host-side search with real training (scripts.language_search)
        from nas.experiment.host_experiment import validate_host_config

        validate_host_config(config)
    elif "searchers" in config:  # a search experiment (scripts.train); bananas_predictor feeds another script
        validate_config(config)


def test_loading_configs_does_not_start_a_jax_backend():
    """``scripts.train`` splits seeds over CPU devices after reading its flags, i.e. after the config file is
    loaded: importing the library and building configs must not initialize a JAX backend."""
    import subprocess
    import sys

    code = (
        "from jax._src import xla_bridge\n"
        "import configs.table3, configs.bananas_ablation, nas.searchers, nas.experiment.run\n"
        "[m.get_config() for m in (configs.table3, configs.bananas_ablation)]\n"
        "print(len(xla_bridge._backends))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=CONFIG_DIR.parent
    )
    assert out.stdout.strip() == "0", out.stderr[-2000:]
