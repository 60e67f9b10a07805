"""Budgets a run cannot meet, refused up front in one line: before anything is built, compiled or allocated.

``check_budget(budget, space, searcher)`` is what every entry point calls (``scripts.meta_train``,
``nas.host.study.Study``); a run plan (``scripts.train``, ``scripts.language_search``:
``nas.experiment.searcher_plan``) calls its three parts as it learns what they need, each once per
searcher: ``check_fields`` when the plan is made, ``check_space`` once the benchmark is loaded,
``check_memory`` once the searcher is built. They check:

- the fields themselves: ``num_trials >= 1``; ``1 <= batch_size <= max_queries``; ``max_queries`` below
  2**31 (query counts are int32 inside the compiled programs); the seeds in ``[0, 2**32)``: JAX's
  ``PRNGKey`` keeps the low 32 bits of a seed, so a larger one silently repeats a smaller one's numbers
  (2**32 runs what 0 runs) and one beyond 64 bits overflows;
- against the ``space`` (``Space.num_configurations``): no configuration is queried twice, so a budget
  above the number of distinct configurations cannot be spent;
- against memory, with a ``searcher``: the run state of one trial (searcher state, history buffers,
  never-re-query set) is measured with ``jax.eval_shape`` of its ``init`` (shapes only: nothing is
  computed or allocated), times ``num_trials``, plus the history each trial returns and the seed keys.
  That is a lower bound of what the run holds at once; it is refused when it exceeds the memory
  available (the accelerators' memory, or the host's ``MemAvailable``), with the amount and the
  options to lower.

Errors are ``BudgetError`` naming the option as the caller spells it (``names``: ``config.max_queries``
on the command line, ``max_queries`` for a Study).
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping

import jax
import numpy as np

MAX_QUERIES = 2**31 - 1  # query counts and indices are int32 in the searchers' states
SEEDS = 2**32  # JAX's PRNGKey(seed) keeps seed mod 2**32: larger seeds repeat smaller ones
FIELDS = ("num_trials", "max_queries", "batch_size", "seed")


class BudgetError(ValueError):
    """A budget the run cannot meet; the message names the option and says what to lower."""


@dataclasses.dataclass(frozen=True)
class Budget:
    """What a run spends: ``num_trials`` seeds of ``max_queries`` queries in batches of ``batch_size``.

    ``seed`` is the root seed; ``seed_span`` the number of consecutive seeds the run uses from it (a
    host-side experiment runs trial ``i`` with ``seed + i``; the compiled runner splits one key: 1).
    ``names`` maps a field to how the user sets it (default: the field's own name).
    """

    max_queries: int
    batch_size: int = 1
    num_trials: int = 1
    seed: int = 0
    seed_span: int = 1
    names: Mapping[str, str] = dataclasses.field(default_factory=dict)
    option_prefix: str = ""  # how the user spells a searcher option: "config.searchers.<label>." on the command line

    def name(self, field: str) -> str:
        return self.names.get(field, field)

    def option(self, name: str) -> str:
        return self.names.get(name, self.option_prefix + name)


def check_budget(budget: Budget, space=None, searcher=None, state_bytes: int | None = None) -> None:
    """``BudgetError`` unless ``budget`` can be spent (module docstring); ``space``, ``searcher`` optional.

    ``state_bytes``: the per-trial memory when the caller knows it better than a searcher's ``init``
    (meta-training's data); it replaces the searcher's run state in the memory estimate. The three
    checks are also separate functions, for a caller that learns the space and the searcher later
    (a run plan checks the fields when it is built, the space once the benchmark is loaded, the memory
    once the searcher is built).
    """
    check_fields(budget)
    check_space(budget, space)
    if searcher is not None or state_bytes is not None:
        check_memory(budget, searcher, state_bytes)


def check_fields(budget: Budget) -> None:
    """``BudgetError`` unless the budget's own fields can be spent: integers, ``num_trials >= 1``,
    ``1 <= batch_size <= max_queries <= 2**31 - 1``, the seeds in ``[0, 2**32)``."""
    b = budget
    for field in FIELDS:
        value = getattr(b, field)
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise BudgetError(f"{b.name(field)} must be an integer, got {value!r}")
    if b.num_trials < 1:
        raise BudgetError(f"{b.name('num_trials')} must be >= 1, got {b.num_trials}")
    if not 1 <= b.max_queries <= MAX_QUERIES:
        raise BudgetError(f"{b.name('max_queries')} must be in [1, 2**31 - 1], got {b.max_queries}")
    if not 1 <= b.batch_size <= b.max_queries:
        raise BudgetError(
            f"{b.name('batch_size')}={b.batch_size} must be in [1, {b.name('max_queries')}={b.max_queries}] "
            "(a batch larger than the budget cannot be spent); lower it"
        )
    last = b.seed + b.seed_span - 1
    if b.seed < 0 or last >= SEEDS:
        span = f" (with {b.seed_span} consecutive seeds from it)" if b.seed_span > 1 else ""
        raise BudgetError(
            f"{b.name('seed')}={b.seed}{span} must lie in [0, 2**32): JAX keys keep 32 bits of a seed, "
            "so a larger seed would repeat a smaller one's numbers"
        )


def check_space(budget: Budget, space=None) -> None:
    """``BudgetError`` when ``max_queries`` exceeds the distinct configurations of ``space`` (None: no check)."""
    b = budget
    n = getattr(space, "num_configurations", None) if space is not None else None
    if n is not None and b.max_queries > n:
        raise BudgetError(
            f"{b.name('max_queries')}={b.max_queries} exceeds the {n:,} distinct configurations of {space.name} "
            f"(no configuration is queried twice); lower {b.name('max_queries')} to at most {n}"
        )


def tree_bytes(tree) -> int:
    """Bytes of the arrays (or ``ShapeDtypeStruct``s) of a pytree."""
    return sum(math.prod(x.shape) * np.dtype(x.dtype).itemsize for x in jax.tree.leaves(tree))


def run_state_bytes(searcher) -> int:
    """Bytes of one trial's run state (``nas.engine.runner.init_state``: searcher state, history buffers),
    from ``jax.eval_shape``: the shapes are traced, nothing is computed or allocated."""
    from nas.core.multi_fidelity import is_multi_fidelity
    from nas.engine.multi_fidelity_runner import mf_init_state
    from nas.engine.runner import init_state

    init = mf_init_state if is_multi_fidelity(searcher) else init_state
    return tree_bytes(jax.eval_shape(lambda k: init(searcher, k), jax.random.PRNGKey(0)))


def history_bytes(num_tokens: int, max_queries: int) -> int:
    """Bytes of one trial's returned history: tokens int32[Q, N], score, report score and cost f32[Q]."""
    return max_queries * (4 * num_tokens + 12)


def available_memory() -> int | None:
    """Bytes the run may use: the accelerators' memory limit, else the host's available memory (Linux
    ``MemAvailable``, else free physical pages); None when unknown."""
    try:
        devices = jax.local_devices()
        stats = devices[0].memory_stats() if devices[0].platform != "cpu" else None
    except Exception:  # noqa: BLE001 - a backend without memory statistics
        stats = None
    if stats and stats.get("bytes_limit"):
        return int(stats["bytes_limit"]) * len(devices)
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def readable(n: float) -> str:
    """A byte count in B, KiB, MiB, GiB or TiB."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024:
            return f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} TiB"


def trial_bytes(searcher, max_queries: int) -> int:
    """Bytes of one trial's run state and returned history (module docstring), shapes only."""
    num_tokens = searcher.space.num_tokens
    state_bytes = run_state_bytes(searcher) if hasattr(searcher, "init") else 0
    if getattr(searcher, "multi_fidelity", False):  # MFHistory: a row per evaluation, 3 more 4-byte fields
        return state_bytes + history_bytes(num_tokens, searcher.max_evaluations) + 12 * searcher.max_evaluations
    return state_bytes + history_bytes(num_tokens, max_queries)


def sizing_options(searcher, max_queries: int, per_trial: int) -> list[str]:
    """The searcher's integer options above their defaults whose default would at least halve a trial's
    memory: what to lower when one trial's state is the problem (workers, a population, candidates, ...)."""
    options = getattr(searcher, "options", None)
    if not dataclasses.is_dataclass(options) or not hasattr(searcher, "init"):
        return []
    found = []
    for f in dataclasses.fields(options):
        value, default = getattr(options, f.name), f.default
        if f.name == "max_queries" or not isinstance(default, int) or isinstance(default, bool):
            continue
        if not isinstance(value, int) or value <= default:
            continue
        try:
            smaller = type(searcher)(searcher.space, dataclasses.replace(options, **{f.name: default}))
            if 2 * trial_bytes(smaller, max_queries) <= per_trial:
                found.append(f.name)
        except Exception:  # noqa: BLE001 - the default may not fit the other options; then it is not the cause
            continue
    return found


def check_memory(budget: Budget, searcher=None, state_bytes: int | None = None) -> None:
    """``BudgetError`` when the run's memory (module docstring) exceeds ``available_memory()``; the message
    names the searcher option that sizes a trial's state when one does (``sizing_options``), else the
    number of trials."""
    b = budget
    measured = state_bytes is None
    if measured:
        state_bytes = trial_bytes(searcher, b.max_queries)
    per_trial = state_bytes + 8  # and its seed key (uint32[2])
    need = b.num_trials * per_trial
    have = available_memory()
    if have is None or need <= have:
        return
    culprits = sizing_options(searcher, b.max_queries, per_trial) if measured else []
    if culprits:
        fix = f"lower {' or '.join(b.option(c) for c in culprits)} (it sizes each trial's state)"
    elif b.num_trials > 1 and per_trial <= have:
        fix = f"lower {b.name('num_trials')} (or {b.name('max_queries')})"
    else:
        fix = f"lower {b.name('max_queries')} or the searcher's options (one trial alone does not fit)"
    raise BudgetError(
        f"the run needs at least {readable(need)} of memory ({b.num_trials:,} trials x {readable(per_trial)} "
        f"of run state: searcher state, history, never-re-query set), more than the {readable(have)} available; "
        + fix
    )
