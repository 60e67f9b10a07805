"""The built-in searchers and the full registry, read from here.

Read the registry from here (``from nas.searchers import make_searcher, available_searchers``). A built-in
searcher's module is imported the first time its name is used (``BUILT_IN`` maps each name to its module
and says whether it is multi-fidelity), so a study of random search does not import the BO surrogates,
the policy networks or optax: its process starts in a fraction of the time. ``SEARCHERS`` (every
registered class) imports them all. A searcher module imports ``nas.core.registry`` (never this
package), so there is no cycle; a searcher registered by the user's own ``@register`` is found as well.
"""

from __future__ import annotations

import importlib

from nas.core import registry
from nas.core.registry import check_option_names, register

__all__ = [
    "BUILT_IN",
    "SEARCHERS",
    "available_searchers",
    "check_option_names",
    "make_options",
    "make_searcher",
    "register",
    "searcher_class",
    "searcher_options",
]

# name: (module under nas.searchers, multi-fidelity); tests/test_registry_table.py checks it against the classes
BUILT_IN: dict[str, tuple[str, bool]] = {
    "alphax": ("alphax", False),
    "asha": ("asha", True),
    "bananas": ("bananas", False),
    "bohb": ("bohb", True),
    "gp_bo": ("gp_bo", False),
    "hyperband": ("successive_halving", True),
    "local_search": ("local_search", False),
    "mcts": ("mcts", False),
    "mf_bananas": ("mf_bananas", True),
    "mo_asha": ("mo_asha", True),
    "mo_regularized_evolution": ("mo_evolution", False),
    "nasbot": ("nasbot", False),
    "nsga2": ("nsga2", False),
    "parego_bananas": ("scalarized", False),
    "parego_local_search": ("scalarized", False),
    "random_search": ("random_search", False),
    "reacts": ("reacts", False),
    "regularized_evolution": ("regularized_evolution", False),
    "remaade": ("remaade", False),
    "smbo_linear": ("smbo_linear", False),
    "successive_halving": ("successive_halving", True),
    "tnas": ("tnas", False),
    "tpe": ("tpe", False),
    "tpe_hyperband": ("tpe_hyperband", True),
    "warm_start": ("warm_start", False),
}


def _import(name: str) -> None:
    if name in BUILT_IN and name not in registry.SEARCHERS:
        importlib.import_module(f"{__name__}.{BUILT_IN[name][0]}")


def import_all() -> None:
    """Imports every built-in searcher module (each registers its classes)."""
    for name in BUILT_IN:
        _import(name)


def available_searchers(multi_fidelity: bool | None = False) -> list[str]:
    """Registered searchers: single-fidelity ones (default; they follow the batch ``ask/tell`` contract),
    multi-fidelity ones (``True``, ``nas.core.multi_fidelity``) or all (``None``). Imports no module."""
    names = {n for n, (_, mf) in BUILT_IN.items() if multi_fidelity is None or mf == multi_fidelity}
    return sorted(names | set(registry.available_searchers(multi_fidelity)))


def searcher_class(name: str):
    """The class registered as ``name`` (its module imported now if it is a built-in); an error naming the
    registered ones (with a did-you-mean hint) otherwise."""
    if isinstance(name, str) and name not in registry.SEARCHERS:
        if name in BUILT_IN:
            _import(name)
        else:
            import_all()  # the error lists every name
    return registry.searcher_class(name)


def searcher_options(name: str) -> list[str]:
    """The option names of searcher ``name`` (its options dataclass fields)."""
    searcher_class(name)
    return registry.searcher_options(name)


def make_options(name: str, **options):
    """The options dataclass of searcher ``name`` built from config values (``nas.core.registry.make_options``)."""
    searcher_class(name)
    return registry.make_options(name, **options)


def make_searcher(name: str, space, **options):
    """Builds registered searcher ``name`` on ``space``; unknown names, options or bad values fail loudly."""
    searcher_class(name)
    return registry.make_searcher(name, space, **options)


def __getattr__(name: str):
    if name == "SEARCHERS":  # every class: the built-ins imported first
        import_all()
        return registry.SEARCHERS
    if name in {m for m, _ in BUILT_IN.values()}:  # `nas.searchers.bananas` as an attribute, as before
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
