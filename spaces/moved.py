"""Old import paths of modules that moved: they keep working for one release, with a warning.

``import nas.experiment_config`` (moved to ``nas.experiment.config``) imports the new module, warns
with a ``DeprecationWarning`` naming the new path, and binds the old name to the same module object,
so ``from nas.experiment_config import build_searcher`` and ``nas.experiment_config.build_searcher``
work as before. ``MOVED`` lists every move (CHANGELOG.md says what moved in which release); one finder
on ``sys.meta_path`` serves them all, so no stub file stands at an old path.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings

REMOVED_IN = "0.4"  # the release whose imports no longer take the old paths

MOVED: dict[str, str] = {  # old module path -> new module path
    # the regrouping into nas.core / nas.engine / nas.experiment / nas.host and spaces.benchmarks (0.2)
    "nas.ask_tell": "nas.host.ask_tell",
    "nas.checkpoint": "nas.engine.checkpoint",
    "nas.cli": "nas.experiment.cli",
    "nas.compiler_memory": "nas.engine.compiler_memory",
    "nas.dedup": "nas.core.dedup",
    "nas.devices": "nas.engine.devices",
    "nas.experiment_config": "nas.experiment.config",
    "nas.host_experiment": "nas.experiment.host_experiment",
    "nas.host_loop": "nas.engine.host_loop",
    "nas.host_search": "nas.host.host_search",
    "nas.peers": "nas.experiment.peers",
    "nas.report": "nas.experiment.report",
    "nas.runner": "nas.engine.runner",
    "nas.searcher": "nas.core.searcher",
    "nas.unseen_draw": "nas.core.unseen_draw",
    "nas.workdir": "nas.experiment.workdir",
    "spaces.analog_nasbench": "spaces.benchmarks.analog_nasbench",
    "spaces.hpobench": "spaces.benchmarks.hpobench",
    "spaces.hpolib": "spaces.benchmarks.hpolib",
    "spaces.nb101_data": "spaces.benchmarks.nb101_data",
    "spaces.nb101_tfrecord": "spaces.benchmarks.nb101_tfrecord",
    "spaces.registry": "spaces.benchmarks.registry",
    "spaces.tabular": "spaces.benchmarks.tabular",
    # 0.3: one Study class, the task loops and the workers package (nas.host)
    "nas.host.ask_tell": "nas.host.study",
    "nas.host.mf_study": "nas.host.study",
    "nas.host.process_workers": "nas.host.workers.process_workers",
    "nas.host.ray_workers": "nas.host.workers.ray_workers",
    "nas.host.host_search": "nas.host.task_search",
    "nas.host.multi_fidelity": "nas.host.task_search",
    # 0.3: the searcher contract, options and registry; modules named by what they hold
    "nas.core.xla_options": "nas.engine.compile_policy",
    "nas.searchers.brackets": "nas.core.ladders",
    "nas.searchers.candidates": "nas.searchers.acquisition_candidates",
    # 0.3: the chunked loop ("host" means the tuner side only)
    "nas.engine.host_loop": "nas.engine.chunked_loop",
    # 0.3: experiments on a training task
    "nas.experiment.host_experiment": "nas.experiment.task_experiment",
}


def new_path(old: str) -> str:
    """Where ``old`` lives now, following a chain of moves."""
    seen = set()
    while old in MOVED and old not in seen:
        seen.add(old)
        old = MOVED[old]
    return old


class _Alias(importlib.abc.Loader):
    def __init__(self, target: str):
        self.target = target

    def create_module(self, spec):
        warnings.warn(
            f"{spec.name} moved to {self.target}: import {self.target} instead "
            f"(the old path goes in nasjax {REMOVED_IN})",
            DeprecationWarning,
            stacklevel=2,  # warnings skips importlib's own frames: the user's import line
        )
        module = importlib.import_module(self.target)  # the module object itself: one module, two names
        self._own = {k: module.__dict__[k] for k in ("__spec__", "__loader__", "__package__") if k in module.__dict__}
        return module

    def exec_module(self, module) -> None:
        """Already executed under its new name; the import system stamped the old name's spec on it: undone."""
        module.__dict__.update(self._own)


class _MovedFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Alias(new_path(fullname)))


def install() -> None:
    """Puts the finder first on ``sys.meta_path`` (once per process)."""
    if not any(isinstance(f, _MovedFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _MovedFinder())
