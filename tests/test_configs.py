"""Every experiment config in configs/ loads and passes validation (names, options, searcher kwargs).

A typo in a config (an unknown searcher, option or benchmark) should fail here, not an hour into a run.
"""

import importlib
import os
import pathlib
import re

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
        from nas.experiment.task_experiment import validate_task_config

        validate_task_config(config)
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


def test_a_config_becomes_a_plan_once_with_each_searchers_options_built_once(monkeypatch, tmp_path):
    """``make_plan`` reads the config once: one options build and one check of each budget part per searcher
    (fields when the plan is made, the space and the memory when the searchers are built on the benchmark)."""
    import dataclasses

    from configs import default
    from nas.experiment import registry, searcher_plan
    from nas.experiment.plan import RunPlan, make_plan

    calls = []

    def counted(name, fn):
        def wrapped(*a, **k):
            calls.append(name)
            return fn(*a, **k)

        return wrapped

    monkeypatch.setattr(registry, "make_entry_options", counted("options", registry.make_entry_options))
    for check in ("check_fields", "check_space", "check_memory"):
        monkeypatch.setattr(searcher_plan, check, counted(check, getattr(searcher_plan, check)))
    config = default.get_config()
    config.num_trials, config.max_queries, config.only = 2, 10, "random_search,local_search"
    calls.clear()  # the config file lists every option (searcher_configs): not the run's
    plan = make_plan(config, str(tmp_path / "wd"))
    assert isinstance(plan, RunPlan) and list(plan.searchers) == ["random_search", "local_search"]
    assert list(plan.entries) == list(config.searchers)  # every entry: the reports read finished ones
    assert (plan.num_trials, plan.max_queries, plan.benchmark) == (2, 10, "nb201/cifar10")
    assert plan.workdir == str(tmp_path / "wd") and plan.trial_keys().shape == (2, 2)
    assert calls == ["options", "check_fields"] * 2
    searchers = plan.build_searchers(plan.load_benchmark())
    assert calls[4:] == ["check_space", "check_memory"] * 2
    assert searchers["local_search"].options == plan.searchers["local_search"].options
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.max_queries = 5


def test_the_renamed_task_experiment_keeps_its_old_names_for_a_release():
    from nas.experiment import task_experiment

    with pytest.warns(DeprecationWarning, match="validate_host_config is now .*validate_task_config"):
        assert task_experiment.validate_host_config is task_experiment.validate_task_config
    with pytest.warns(DeprecationWarning, match="run_task_experiment"):
        assert task_experiment.run_host_experiment is task_experiment.run_task_experiment


def documented_args(name: str) -> list:
    """``None`` (no argument) and every ``configs/<name>.py:<argument>`` the config's docstring shows."""
    doc = importlib.import_module(f"configs.{name}").__doc__ or ""
    path = re.escape(f"configs/{name.replace('.', '/')}.py:")
    return [None, *dict.fromkeys(re.findall(path + r"([^\s`'\"\\{]+)", doc))]


CONFIG_ARGS = [(name, arg) for name in CONFIGS for arg in documented_args(name)]


def test_the_documented_arguments_are_found():
    assert ("multiobjective", "nb201/cifar10,latency,constrained") in CONFIG_ARGS
    assert ("paper.tpe", "mlp/naval") in CONFIG_ARGS and ("table3", None) in CONFIG_ARGS


@pytest.mark.parametrize("name,arg", CONFIG_ARGS, ids=[f"{n}:{a}" if a else n for n, a in CONFIG_ARGS])
def test_every_label_of_a_shipped_config_can_be_named_in_an_override(name, arg):
    """``--config.searchers.<label>.<field>=...`` parses for every label of every config and documented
    argument (the file loaded and the overrides applied by ml_collections, as ``scripts.train`` does; nothing
    runs or is validated): a label is a field name in an override path."""
    from absl import flags
    from ml_collections import config_flags

    config = importlib.import_module(f"configs.{name}").get_config(*([arg] if arg else []))
    if "searchers" not in config:  # a config that feeds another script names no searchers
        return
    labels = list(config.searchers)
    spec = f"configs/{name.replace('.', '/')}.py" + (f":{arg}" if arg else "")
    argv = ["train", f"--config={spec}", *(f"--config.searchers.{label}.name=set_by_override" for label in labels)]
    fv = flags.FlagValues()
    config_flags.DEFINE_config_file("config", flag_values=fv, sys_argv=argv)
    cwd = os.getcwd()
    try:
        os.chdir(CONFIG_DIR.parent)  # the spec is a path from the repository root, as in the docstrings
        fv(argv)
        parsed = fv.config
    finally:
        os.chdir(cwd)
    assert {label: entry.name for label, entry in parsed.searchers.items()} == dict.fromkeys(labels, "set_by_override")
