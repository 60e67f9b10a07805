"""Any searcher warm-started from an initial design: its first queries are given strings.

TNAS (Shala, Elsken, Hutter & Grabocka, 2023), Section 5, "Results for Hypothesis 1": "For all methods, we
use the 5 top-performing architectures from the meta-training dataset as a starting point. In that sense,
all these baselines are 'transfer learning' by being initialized with the best architectures on the
meta-training dataset." ``warm_start`` runs the registered searcher ``searcher`` (its options a JSON object,
``searcher_options``) and replaces its first ``num_design`` queries by the design: the top design of a TNAS
parameters file (``design_file``, written by ``scripts.meta_train``) or strings given as
``design = "t,t,...;t,t,..."`` (tokens of each string, strings separated by ``;``).

The inner searcher asks as usual; in the batches that hold design queries, its rows at those positions
are dropped and the design takes them, and a row of its own that repeats a design string or an earlier
query is replaced by a fresh random string (so nothing is queried twice). It is then told the design's
scores as if it had asked for them. Meant for searchers whose first queries are random draws (random search, regularized
evolution, local search, BANANAS, GP-BO: their random initial strings, ``num_init``, include the design);
a policy searcher would be told strings its policy did not sample.

``warm_started(entry, ...)`` turns a config entry ``{"name": ..., **options}`` into the wrapper's entry.
"""

from __future__ import annotations

import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from nas.core.contract import Searcher
from nas.core.dedup import Seen, seen_add, seen_contains
from nas.core.options import SearcherOptions, positive
from nas.core.registry import register
from nas.searchers.acquisition_candidates import fill_missing


@dataclasses.dataclass(frozen=True)
class WarmStartOptions(SearcherOptions):
    """Attributes (``batch_size`` and ``max_queries`` are passed to the inner searcher):
    searcher: the registered searcher to warm-start.
    searcher_options: its other options, a JSON object (e.g. ``'{"acquisition": "ucb"}'``).
    design_file: a TNAS parameters file whose top design starts the run (``scripts.meta_train``).
    design: or the design's strings, ``"t,t,...;t,t,..."``.
    num_design: design strings queried first (the first ones of the file's design).
    """

    searcher: str = "random_search"
    searcher_options: str = "{}"
    design_file: str = ""
    design: str = ""
    num_design: int = 5

    def check(self):
        super().check()
        positive(self, "num_design")
        if self.searcher == "warm_start":
            raise ValueError("warm_start cannot wrap itself; name another registered searcher")
        inner = self.inner_options()
        bad = sorted({"batch_size", "max_queries"} & set(inner))
        if bad:
            raise ValueError(f"searcher_options may not set {bad}: set them on warm_start itself")
        if bool(self.design_file) == bool(self.design):
            raise ValueError("give the initial design as exactly one of design_file (TNAS parameters) or design")
        if self.num_design >= self.max_queries:
            raise ValueError(f"num_design ({self.num_design}) must be below max_queries ({self.max_queries})")

    def inner_options(self) -> dict:
        try:
            inner = json.loads(self.searcher_options)
        except json.JSONDecodeError as e:
            raise ValueError(f"searcher_options must be a JSON object, got {self.searcher_options!r} ({e})") from e
        if not isinstance(inner, dict):
            raise ValueError(f"searcher_options must be a JSON object, got {self.searcher_options!r}")
        return inner


def parse_design(text: str) -> np.ndarray:
    """``"t,t,...;t,t,..."`` -> int32[D, N]."""
    try:
        rows = [[int(t) for t in row.split(",")] for row in text.strip().strip(";").split(";")]
        return np.asarray(rows, np.int32)
    except ValueError as e:
        raise ValueError(f"design must be strings of integer tokens 't,t,...;t,t,...', got {text!r}") from e


def warm_started(entry: dict, *, design_file: str = "", design: str = "", num_design: int = 5) -> dict:
    """The ``warm_start`` config entry that runs config entry ``entry`` from the design."""
    from nas.searchers import make_options  # the full registry

    entry = dict(entry)
    name = entry.pop("name")
    batch = entry.pop("batch_size", make_options(name).batch_size)
    return {
        "name": "warm_start",
        "searcher": name,
        "searcher_options": json.dumps(entry, sort_keys=True),
        "batch_size": batch,
        "design_file": design_file,
        "design": design,
        "num_design": num_design,
    }


@struct.dataclass
class WarmStartState:
    inner: object  # the inner searcher's state
    num_told: jax.Array  # int32[] queries told so far (kept by the base, Searcher.record_told)
    seen: Seen  # the strings queried so far (the base's books; the inner searcher keeps its own)


@register("warm_start")
class WarmStart(Searcher):
    Options = WarmStartOptions

    def setup(self):
        from nas.searchers import make_options, searcher_class  # the full registry (the inner module on first use)

        o = self.options
        cls = searcher_class(o.searcher)
        inner = {**o.inner_options(), "batch_size": o.batch_size, "max_queries": o.max_queries}
        self.inner = cls(self.space, make_options(o.searcher, **inner))
        self.params_sha256 = ""
        if o.design_file:
            from nas.searchers.tnas import file_sha256
            from surrogates.meta_params import load_params

            _, _, meta, design, _ = load_params(o.design_file)
            if meta.get("space") != self.space.name:
                raise ValueError(
                    f"{o.design_file} holds a design of space {meta.get('space')!r}, not {self.space.name!r}"
                )
            self.params_sha256 = file_sha256(o.design_file)
        else:
            design = parse_design(o.design)
        if design.ndim != 2 or design.shape[0] < o.num_design or design.shape[1] != self.space.num_tokens:
            raise ValueError(
                f"the initial design holds {design.shape[0] if design.ndim == 2 else 0} strings of "
                f"{design.shape[-1] if design.ndim else 0} tokens; need {o.num_design} of {self.space.num_tokens}"
            )
        self.design = design[: o.num_design]
        ids = np.asarray(jax.vmap(self.space.string_id)(jnp.asarray(self.design)))
        if np.any(ids < 0) or len(set(ids.tolist())) < len(ids):
            raise ValueError(f"the initial design must be {o.num_design} distinct valid strings of {self.space.name}")
        self.design_ids = ids

    # the runner's hooks are the inner searcher's
    @property
    def splits_over_devices(self) -> bool:
        return self.inner.splits_over_devices

    @property
    def compile_profile(self) -> str:
        return self.inner.compile_profile

    def breakpoints(self) -> list[int]:
        return self.inner.breakpoints()

    def program_for(self, lo: int, hi: int) -> WarmStart:
        inner = self.inner.program_for(lo, hi)
        if inner is self.inner:
            return self
        other = object.__new__(type(self))
        other.__dict__.update(self.__dict__)
        other.inner, other.variant = inner, inner.variant
        return other

    @property
    def identity(self) -> str:
        """The base identity plus the SHA-256 of the design file (as TNAS's)."""
        ident = json.loads(super().identity)
        ident["params_sha256"] = self.params_sha256
        return json.dumps(ident, sort_keys=True)

    def _key(self):
        return (*super()._key(), self.params_sha256)

    def init(self, key):
        capacity = self.max_queries + self.options.num_design + 2 * self.batch_size  # queries, design, fill
        return WarmStartState(inner=self.inner.init(key), **self.new_books(WarmStartState, capacity))

    def ask(self, key, state):
        k_inner, k_fill = jax.random.split(key)
        tokens, inner = self.inner.ask(k_inner, state.inner)
        pos = state.num_told + jnp.arange(self.batch_size)
        is_design = pos < self.options.num_design
        tokens = jnp.where(is_design[:, None], jnp.asarray(self.design)[jnp.clip(pos, 0, len(self.design) - 1)], tokens)
        ids = jax.vmap(self.space.string_id)(tokens)
        design_ids = jnp.asarray(self.design_ids)
        # the inner searcher does not know the design before it is told it (random search on a grid never
        # learns it): its rows that repeat a design string or an earlier query get fresh random strings
        clash = ~is_design & (jnp.any(ids[:, None] == design_ids[None, :], axis=1) | seen_contains(state.seen, ids))

        def refill(t):
            return fill_missing(k_fill, self.space, seen_add(state.seen, design_ids), t, ~clash)

        tokens = jax.lax.cond(jnp.any(clash), refill, lambda t: t, tokens)
        return tokens, state.replace(inner=inner)

    def _tell(self, key, tokens, scores, state):
        inner, metrics = self.inner.tell(key, tokens, scores, state.inner)  # the inner searcher's own books too
        return state.replace(inner=inner), metrics
