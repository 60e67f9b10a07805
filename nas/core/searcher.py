"""Deprecated: the searcher contract, options and registry now live in three modules.

- ``nas.core.contract``: ``Searcher``, the base class and its hooks;
- ``nas.core.options``: ``SearcherOptions``, ``OptionError``, ``positive``, ``one_of``, ``feature_kind``,
  ``NON_FINITE``, ``check_option_names``;
- ``nas.core.registry``: ``register`` and ``SEARCHERS``; the full registry (``available_searchers``,
  ``searcher_class``, ``searcher_options``, ``make_options``, ``make_searcher``) is read from
  ``nas.searchers``, which registers the built-in searchers.

This module re-exports those names for one release and warns on import.
"""

from __future__ import annotations

import warnings

from nas.core.contract import Searcher
from nas.core.options import (
    NON_FINITE,
    OptionError,
    SearcherOptions,
    check_option_names,
    feature_kind,
    one_of,
    positive,
)
from nas.searchers import (
    SEARCHERS,
    available_searchers,
    make_options,
    make_searcher,
    register,
    searcher_class,
    searcher_options,
)
from spaces.moved import REMOVED_IN

__all__ = [
    "NON_FINITE",
    "SEARCHERS",
    "OptionError",
    "Searcher",
    "SearcherOptions",
    "available_searchers",
    "check_option_names",
    "feature_kind",
    "make_options",
    "make_searcher",
    "one_of",
    "positive",
    "register",
    "searcher_class",
    "searcher_options",
]

warnings.warn(
    "nas.core.searcher is split: import Searcher from nas.core.contract, SearcherOptions, OptionError, positive, "
    "one_of and feature_kind from nas.core.options, register from nas.core.registry, and make_searcher, "
    "available_searchers, searcher_class and make_options from nas.searchers "
    f"(the old path goes in nasjax {REMOVED_IN})",
    DeprecationWarning,
    stacklevel=2,
)
