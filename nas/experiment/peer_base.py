"""What every peer is: a searcher of another library that runs on the host, and its protocol's options.

A peer class (``Peer`` subclass) names its options (``Options``), the per-seed object that proposes and
is told (``Proposer``: ``ask() -> (trial, tokens)``, ``ask_fixed(tokens)``, ``tell(trial, value | None)``),
the optional library it needs (``installed``, raising ``MissingPackageError`` with an install hint) and
its registry name; ``runs_on_host`` is what the experiment's lookup (``nas.experiment.registry``) reads
to run it with ``nas.experiment.peers.run_peer`` instead of compiling it. The peers register into
``PEERS`` here (``@register_peer("name")``), a module that imports none of them: they live in
``nas.experiment.tpe_peer``, ``syne_tune_peer`` and ``mo_peers``, and ``nas.experiment.peers`` imports
them all (read the full registry from there).
"""

from __future__ import annotations

import dataclasses
import json
from typing import ClassVar

import jax
import numpy as np

from nas.core.multi_fidelity import MultiFidelitySearcher
from nas.core.options import SearcherOptions, one_of, positive
from spaces.base import Space


@dataclasses.dataclass(frozen=True)
class HostPeerOptions(SearcherOptions):
    """The options of the protocol (``nas.experiment.peers``), every host peer's (``batch_size`` 1):
    max_repeats: repeated proposals in a row before an unseen configuration is queried instead.
    fallback: ``mutate`` (edits of the peer's last proposal) or ``uniform`` (a uniform draw): that configuration.
    repeats: ``fallback`` (a repeated proposal is not queried: told as failed, then ``fallback``) or
      ``requery`` (pure Optuna: every proposal queried and told, repeats included).
    seeds_per_group: seeds run in lockstep and checkpointed together (0 = all at once).
    """

    max_repeats: int = 5
    fallback: str = "mutate"
    repeats: str = "fallback"
    seeds_per_group: int = 10

    def check(self):
        super().check()
        if self.batch_size != 1:
            raise ValueError(f"a host peer proposes one configuration at a time: batch_size must be 1, got "
                             f"{self.batch_size}")  # fmt: skip
        positive(self, "max_repeats")
        one_of(self, "fallback", ("mutate", "uniform"))
        one_of(self, "repeats", ("fallback", "requery"))
        if self.seeds_per_group < 0:
            raise ValueError(f"seeds_per_group must be >= 0, got {self.seeds_per_group}")


class Peer:
    """A host-side searcher: its space and options (``identity`` fingerprints checkpoints); the class
    carries its registry name, options class, proposer class and the library it needs."""

    registry_name: ClassVar[str] = ""
    Options: ClassVar[type[SearcherOptions]] = HostPeerOptions
    Proposer: ClassVar[type]
    runs_on_host: ClassVar[bool] = True  # run by nas.experiment.peers.run_peer, never compiled
    multi_fidelity: ClassVar[bool] = False  # a multi-fidelity peer returns an MFHistory (a row per evaluation)

    def __init__(self, space: Space, options: SearcherOptions):
        self.space, self.options = space, options
        self.installed()  # fail now, before a workdir is touched, when the library is absent

    @staticmethod
    def installed() -> None:
        """Raises ``MissingPackageError`` (with the install command) when the peer's library is absent."""

    @classmethod
    def repeats_reason(cls, options: dict) -> str:
        """Why a run with ``options`` (an entry's values) may query a configuration twice ('' = it does not)."""
        if options.get("repeats") == "requery":
            return "plain Optuna re-queries repeated proposals"
        return ""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(space={self.space.name}, {self.options})"

    @property
    def identity(self) -> str:
        opts = dataclasses.asdict(self.options)
        return json.dumps({"peer": self.registry_name, "space": self.space.name, "options": opts}, sort_keys=True)

    @property
    def max_queries(self) -> int:
        return self.options.max_queries

    @property
    def max_evaluations(self) -> int:
        """A multi-fidelity peer's history rows: the bound our engine uses for the same options."""
        return MultiFidelitySearcher(self.space, self.options).max_evaluations

    def proposer(self, key: jax.Array):
        seed = int(jax.random.randint(key, (), 0, np.iinfo(np.int32).max))
        return self.Proposer(self.space, self.options, seed)


PEERS: dict[str, type[Peer]] = {}  # filled by the peer modules; nas.experiment.peers imports them all


def register_peer(name: str):
    """Class decorator: registers a ``Peer`` subclass under ``name`` (read the full registry from
    ``nas.experiment.peers``, which imports every peer module)."""

    def deco(cls: type[Peer]) -> type[Peer]:
        if name in PEERS:
            raise ValueError(f"peer {name!r} registered twice")
        cls.registry_name = name
        PEERS[name] = cls
        return cls

    return deco
