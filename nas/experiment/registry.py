"""Every searcher a config can name, in one lookup: the compiled searchers and the peers.

A config entry's ``name`` is a searcher of ``nas.searchers`` (compiled: the chunked loop runs it) or a
peer of ``nas.experiment.peers`` (another library's searcher that runs on the host: its Python loop
``run_peer`` runs it). The registered class says which: ``runs_on_host`` (True on a peer) and
``multi_fidelity``; the run plan reads both from here, so no step of a run (the plan, the run, the
reports, the command line) names a peer. Importing this module fills both registries: it imports
``nas.searchers`` (the compiled searchers) and ``nas.experiment.peers`` (every peer).
"""

from __future__ import annotations

from nas.core.options import SearcherOptions
from nas.experiment import peers
from nas.searchers import available_searchers, make_options, searcher_class
from spaces.base import Space
from spaces.names import lookup

__all__ = ["available", "registered_class", "runs_on_host", "is_multi_fidelity", "make_entry_options", "build",
           "repeats_reason"]  # fmt: skip


def available() -> list[str]:
    """Every name a config entry may give: the registered searchers (single- and multi-fidelity), then the peers."""
    return available_searchers(multi_fidelity=None) + peers.available_peers()


def registered_class(name: str) -> type:
    """The class registered as ``name``: a ``Searcher`` subclass, or a peer's class (``runs_on_host``);
    ``spaces.names.UnknownName`` listing every name otherwise."""
    if name in peers.PEERS:
        return peers.PEERS[name]
    if name in available_searchers(multi_fidelity=None):
        return searcher_class(name)
    return lookup("searcher", name, dict.fromkeys(available()))


def runs_on_host(name: str) -> bool:
    """Whether ``name`` is a peer, proposing one configuration at a time from Python."""
    return bool(getattr(registered_class(name), "runs_on_host", False))


def is_multi_fidelity(name: str) -> bool:
    """A multi-fidelity searcher (``nas.core.multi_fidelity``) or a multi-fidelity peer (Syne Tune's)."""
    return bool(getattr(registered_class(name), "multi_fidelity", False))


def make_entry_options(name: str, **options) -> SearcherOptions:
    """The options of ``name`` from a config entry's values (names and values checked; a compiled searcher's
    defaults fitted to a small budget, ``nas.core.registry.make_options``)."""
    if runs_on_host(name):
        return peers.make_peer_options(name, **options)
    return make_options(name, **options)


def build(name: str, space: Space, options: SearcherOptions):
    """Searcher (or peer) ``name`` on ``space`` with ``options`` built by ``make_entry_options``."""
    return registered_class(name)(space, options)


def repeats_reason(name: str, options: dict) -> str:
    """Why a run of ``name`` with ``options`` (an entry's values) could query a configuration twice: the
    class's ``repeats_reason(options)`` (a peer that samples with replacement, or re-queries its repeats),
    else that the space is nearly exhausted (a compiled searcher never re-queries while unseen ones remain)."""
    why = getattr(registered_class(name), "repeats_reason", None)
    return (why(options) if why is not None else "") or "the space is nearly exhausted"
