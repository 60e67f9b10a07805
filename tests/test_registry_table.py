"""The lazy registry (``nas.searchers.BUILT_IN``): every built-in searcher's module is imported when its name
is first used, so the table must name each registered class's module and its multi-fidelity flag."""

from __future__ import annotations

import subprocess
import sys

import nas.searchers as searchers
from nas.core import registry


def test_the_table_names_every_built_in_searchers_module_and_kind():
    searchers.import_all()
    built_in = {n: c for n, c in registry.SEARCHERS.items() if c.__module__.startswith("nas.searchers.")}
    assert sorted(built_in) == sorted(searchers.BUILT_IN)
    for name, cls in built_in.items():
        module, multi_fidelity = searchers.BUILT_IN[name]
        assert cls.__module__ == f"nas.searchers.{module}", name
        assert bool(getattr(cls, "multi_fidelity", False)) == multi_fidelity, name


def test_listing_imports_nothing_and_a_name_imports_its_module_only():
    code = (
        "import sys, nas.searchers as s\n"
        "names = s.available_searchers(multi_fidelity=None)\n"
        "assert 'bananas' in names and 'asha' in names, names\n"
        "assert 'nas.searchers.bananas' not in sys.modules\n"
        "s.make_options('random_search', max_queries=10)\n"
        "assert 'nas.searchers.random_search' in sys.modules\n"
        "assert 'nas.searchers.bananas' not in sys.modules and 'optax' not in sys.modules, 'loaded too much'\n"
        "assert len(s.SEARCHERS) >= len(names) and 'nas.searchers.bananas' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env={"JAX_PLATFORMS": "cpu", "PATH": ""})


def test_an_unknown_name_lists_every_searcher():
    try:
        searchers.searcher_class("random_serch")
    except Exception as e:  # noqa: BLE001 - the registry's own error
        assert "random_search" in str(e) and "tnas" in str(e)
    else:
        raise AssertionError("an unknown name must fail")
