"""Rungs and brackets of successive halving, Hyperband and ASHA on the fidelities an objective offers.

Li, Jamieson, DeSalvo, Rostamizadeh & Talwalkar (2018), "Hyperband: A Novel Bandit-Based Approach to
Hyperparameter Optimization", JMLR, Algorithms 1 (SuccessiveHalving inside Hyperband) and 2: with the
maximum budget ``R``, the minimum ``r_min`` and the reduction factor ``eta``,

    s_max = floor(log_eta(R / r_min)),   B = (s_max + 1) R
    bracket s = s_max, ..., 0:  n = ceil(B / R * eta^s / (s + 1)),  r = R eta^-s
    rung i = 0..s:              n_i = floor(n eta^-i) configurations at r_i = r eta^i,
                                the best floor(n_i / eta) of them go on to rung i + 1.

For ``R = 81, eta = 3`` (and budgets 1, 3, 9, 27, 81 on offer) these are the paper's Table 1, e.g.
bracket s = 3: (n_i, r_i) = (34, 3), (11, 9), (3, 27), (1, 81).

**The ladder.** The rung budgets form a geometric ladder with ratio ``eta`` between the minimum budget
``r`` and the maximum ``R``, anchored at one end (``anchor``):

- ``"max"`` (Hyperband's, Li et al. 2018): ``R eta^(k - s_max)``, k = 0..s_max: the top rung is ``R``,
  the lowest ``R eta^-s_max >= r``;
- ``"min"`` (ASHA's, Li et al. 2020, Algorithm 2: rung ``k`` at ``r eta^k``): ``r eta^k``, k = 0..s_max,
  then ``R`` itself where ``r eta^s_max < R`` (the incumbent is chosen among top-budget results, so the
  top budget is always a rung).

``eta = 0`` picks it from the budgets (``auto_eta``): ``(R / r)^(1 / (K - 1))`` for the ``K`` offered
budgets in ``[r, R]``, so two fidelities are the two rungs (``eta = R / r``) and a geometric grid is
its own ladder.

**Budgets an objective offers.** A table offers only some budgets (NAS-Bench-201: 12 and 200 epochs).
``rung_ladder`` maps each rung of the ladder to the offered fidelity nearest to it on a log scale (ties
go to the cheaper one) and merges rungs that land on the same fidelity; the schedule then has ``K``
distinct rungs and Hyperband runs its ``K`` brackets s = K-1..0 with the formulas above and
``s_max = K - 1``. On a geometric grid with ratio ``eta`` nothing changes; with two fidelities and
``eta < R / r`` the schedule degrades to a bracket of two rungs (``eta`` configurations at the low
fidelity, the best ``1/eta`` promoted) and a bracket of one rung (full evaluations only).
``describe_schedule`` lists the ladder's budgets and the fidelities they run at.
"""

from __future__ import annotations

import dataclasses
import math

from nas.core.multi_fidelity import MultiFidelityOptions
from nas.core.options import one_of

Rung = tuple[int, int]  # (fidelity index, configurations evaluated there)
Bracket = tuple[Rung, ...]


def fidelity_index(budgets: tuple[float, ...], budget: float, what: str, default: int) -> int:
    """The index of ``budget`` among ``budgets`` (``default`` for 0), or a ``ValueError`` naming the choices."""
    if budget == 0:
        return default
    for i, b in enumerate(budgets):
        if math.isclose(b, budget, rel_tol=1e-9):
            return i
    raise ValueError(f"{what}={budget:g} is not one of the objective's fidelities {budgets} (0 = the default)")


ANCHORS = ("max", "min")


@dataclasses.dataclass(frozen=True)
class RungOptions(MultiFidelityOptions):
    """The ladder's options (and those of ``MultiFidelityOptions``):
    eta: the reduction factor: 1/eta of a rung is promoted (3; 0 = ``auto_eta``).
    min_budget, max_budget: the lowest and highest rung's budget, each one of the objective's
      fidelities (0 = the lowest / the top fidelity).
    anchor: ``"max"`` (rungs ``R eta^-k``, Hyperband's) or ``"min"`` (rungs ``r eta^k``, ASHA's).
    """

    eta: float = 3.0
    min_budget: float = 0.0
    max_budget: float = 0.0
    anchor: str = "max"

    def check(self):
        super().check()
        if not (self.eta == 0.0 or (math.isfinite(self.eta) and self.eta > 1.0)):
            raise ValueError(f"eta must be a finite number > 1 (1/eta of each rung is promoted) or 0 (automatic: "
                             f"the budgets' ratio), got {self.eta}")  # fmt: skip
        if not (self.min_budget >= 0 and self.max_budget >= 0):
            raise ValueError("min_budget and max_budget are budgets of the objective's fidelities (0 = default)")
        one_of(self, "anchor", ANCHORS)


@dataclasses.dataclass(frozen=True)
class Ladder:
    """A searcher's rungs: ``fidelities`` (indices, increasing), the resolved ``eta``, the ladder's budgets
    before they were mapped onto the offered ones (``ideal``) and the fidelity each was mapped to (``mapped``)."""

    fidelities: tuple[int, ...]
    eta: float
    ideal: tuple[float, ...]
    mapped: tuple[int, ...]
    anchor: str

    def drop_lowest(self, s: int) -> Ladder:
        """The ladder without its ``s`` lowest rungs (ASHA's early-stopping rate)."""
        keep = self.fidelities[s:]
        pairs = [(r, f) for r, f in zip(self.ideal, self.mapped) if f >= keep[0]]
        return dataclasses.replace(self, fidelities=keep, ideal=tuple(r for r, _ in pairs),
                                   mapped=tuple(f for _, f in pairs))  # fmt: skip


def ladder_from_options(options: RungOptions, budgets: tuple[float, ...]) -> Ladder:
    """The ladder that ``options`` (eta, min_budget, max_budget, anchor) give on ``budgets``."""
    lo = fidelity_index(budgets, options.min_budget, "min_budget", 0)
    hi = fidelity_index(budgets, options.max_budget, "max_budget", len(budgets) - 1)
    eta = float(options.eta) or auto_eta(budgets, lo, hi)
    fids = rung_ladder(budgets, eta, lo, hi, options.anchor)
    ideal = ideal_budgets(budgets, eta, lo, hi, options.anchor)
    mapped = tuple(nearest_fidelity(budgets, r, lo, hi) for r in ideal)
    return Ladder(fids, eta, tuple(ideal), mapped, options.anchor)


def auto_eta(budgets: tuple[float, ...], lo: int, hi: int) -> float:
    """``(R / r)^(1 / (K - 1))`` over the ``K`` offered budgets in ``[budgets[lo], budgets[hi]]``: two
    fidelities are two rungs (``eta = R / r``); one fidelity: 3 (a single rung, eta unused)."""
    if hi <= lo:
        return 3.0
    return (budgets[hi] / budgets[lo]) ** (1.0 / (hi - lo))


def ideal_budgets(budgets: tuple[float, ...], eta: float, lo: int, hi: int, anchor: str = "max") -> list[float]:
    """The ladder's rung budgets between ``budgets[lo]`` and ``budgets[hi]`` (module docstring): ``R eta^(k -
    s_max)`` for the ``"max"`` anchor, ``r eta^k`` and then ``R`` for ``"min"``."""
    r_max, r_min = budgets[hi], budgets[lo]
    s_max = int(math.floor(math.log(r_max / r_min) / math.log(eta) + 1e-9))
    if anchor == "max":
        return [r_max * eta ** (k - s_max) for k in range(s_max + 1)]
    rungs = [r_min * eta**k for k in range(s_max + 1)]
    return rungs + ([r_max] if rungs[-1] < r_max * (1 - 1e-9) else [])


def nearest_fidelity(budgets: tuple[float, ...], r: float, lo: int, hi: int) -> int:
    """The index in ``[lo, hi]`` of the offered budget nearest to ``r`` on a log scale (ties: the lower)."""
    dist = [abs(math.log(budgets[i] / r)) for i in range(lo, hi + 1)]
    return lo + min(range(len(dist)), key=lambda j: (round(dist[j], 12), j))


def rung_ladder(budgets: tuple[float, ...], eta: float, lo: int, hi: int, anchor: str = "max") -> tuple[int, ...]:
    """Fidelity indices of the rungs, increasing: each ladder budget's nearest offered fidelity in
    ``[lo, hi]`` (``nearest_fidelity``), repeats merged (module docstring)."""
    if not 0 <= lo <= hi < len(budgets):
        raise ValueError(f"the minimum budget {budgets[lo]:g} must not exceed the maximum {budgets[hi]:g}")
    ladder: list[int] = []
    for r in ideal_budgets(budgets, eta, lo, hi, anchor):
        i = nearest_fidelity(budgets, r, lo, hi)
        if not ladder or ladder[-1] != i:
            ladder.append(i)
    if ladder[-1] != hi:  # the top rung is R itself; kept even if rounding moved it
        ladder.append(hi)
    return tuple(ladder)


def bracket(ladder: tuple[int, ...], eta: float, s: int, n: int) -> Bracket:
    """Bracket ``s`` (its first rung is ladder rung ``K - 1 - s``) starting ``n`` configurations:
    rung i holds ``floor(n eta^-i)`` of them (Algorithm 1's SuccessiveHalving(n, r))."""
    k = len(ladder)
    if not 0 <= s < k:
        raise ValueError(f"bracket s={s} does not exist: the schedule has rungs s = 0..{k - 1}")
    rungs = []
    for i in range(s + 1):
        size = int(math.floor(n * eta ** (-i) + 1e-9))
        if size < 1:
            break
        rungs.append((ladder[k - 1 - s + i], size))
    return tuple(rungs)


def successive_halving_bracket(ladder: tuple[int, ...], eta: float, s: int = -1, n: int = 0) -> Bracket:
    """One successive-halving bracket: ``s`` (-1 = the one starting at the lowest rung) with ``n`` new
    configurations (0 = ``ceil(eta^s)``, the fewest of which one reaches the top; ``eta^s`` for an integer
    ``eta``)."""
    s = len(ladder) - 1 if s < 0 else s
    return bracket(ladder, eta, s, n or int(math.ceil(eta**s - 1e-9)))


def hyperband_brackets(ladder: tuple[int, ...], eta: float) -> tuple[Bracket, ...]:
    """Hyperband's brackets s = s_max..0 (Algorithm 2) on the ``K``-rung ladder, ``s_max = K - 1``."""
    k = len(ladder)
    return tuple(bracket(ladder, eta, s, int(math.ceil(k * eta**s / (s + 1) - 1e-9))) for s in range(k - 1, -1, -1))


def describe_ladder(name: str, ladder: Ladder, budgets: tuple[float, ...], unit: str) -> str:
    """One line: eta, the anchor, the ladder's budgets and the fidelities they run at."""
    unit = f" {unit}" if unit else ""
    form = {"max": "R eta^-k, anchored at the maximum budget", "min": "r eta^k, anchored at the minimum budget"}
    used, ideal = ladder.fidelities, ", ".join(f"{r:.4g}" for r in ladder.ideal)
    return (  # "merged": ladder budgets that share a fidelity
        f"{name}: eta={ladder.eta:.4g}; rungs {form[ladder.anchor]}: {ideal}{unit} run at the fidelities"
        f" {', '.join(f'{budgets[f]:g}' for f in used)}{unit}"
        + ("" if len(ladder.ideal) == len(used) else f" ({len(ladder.ideal)} rungs merged into {len(used)})")
    )


def describe_schedule(name: str, brackets: tuple[Bracket, ...], budgets: tuple[float, ...], unit: str,
                      ladder: Ladder) -> str:  # fmt: skip
    """The ladder (``describe_ladder``) and each bracket's rungs."""
    lines = [describe_ladder(name, ladder, budgets, unit)]
    unit = f" {unit}" if unit else ""
    for j, b in enumerate(brackets):
        rungs = ", ".join(f"{n} x {budgets[f]:g}" for f, n in b)
        lines.append(f"  bracket {j}: {rungs}{unit}")
    lines.append("  brackets repeat in this order until the budget is spent")
    return "\n".join(lines)


def evaluation_bound(brackets: tuple[Bracket, ...], budgets: tuple[float, ...], max_resource: float) -> int:
    """Evaluations dispatched before ``max_resource`` is spent when the brackets repeat in order, each charged
    at least its budget (a promotion at least the difference to the rung below, for objectives that continue):
    a bound on a run's evaluations, whatever the number of workers (they only change the order results
    arrive in)."""
    charges = []
    for b in brackets:
        for i, (f, n) in enumerate(b):
            charge = budgets[f] - (budgets[b[i - 1][0]] if i else 0.0)
            charges.extend([charge] * n)
    per_cycle = sum(charges)
    cycles = max(int(max_resource // per_cycle) - 1, 0)  # whole cycles certainly below the budget
    spent, count = cycles * per_cycle, cycles * len(charges)
    while True:
        for c in charges:
            if spent >= max_resource:
                return count
            spent += c
            count += 1


def asha_bounds(charges: tuple[float, ...], eta: float, workers: int, max_resource: float) -> tuple[int, int]:
    """``(configurations, evaluations)``: bounds on what one ASHA run (Li et al. 2020, Algorithm 2) starts and
    evaluates, whatever the order results arrive in. ``charges[k]``: the least resource an evaluation at
    rung ``k`` is charged (the bottom budget; a promotion's budget, or its difference to the rung below for
    an objective that continues).

    A new configuration starts only when no rung ``k`` has a promotable member, i.e. when the top
    ``floor(n_k / eta)`` of its ``n_k`` results have all been promoted (``p_k >= floor(n_k / eta)``). When
    the ``N``-th starts, at most ``W - 1`` evaluations are running, so ``n_0 >= N - W`` and ``n_{k+1} >=
    p_k - (W - 1)``, and everything dispatched before it was dispatched while the resource spent was below
    the budget ``B``: ``(N - 1) c_0 + sum_k p_k c_{k+1} < B``, the largest such ``N`` bounds the
    configurations. Every dispatch but the last happens below ``B``, each promotion costs at least the
    cheapest promotion charge: the evaluations are at most ``1 + max over n <= N of n + min((K - 1) n,
    floor((B - n c_0) / c_promo))``. ``B`` gets a relative slack of 1e-3 for the engine's float32 sums.
    """
    slack = max_resource * (1 + 1e-3)
    c0, promo = charges[0], charges[1:]

    def least_spent_before(n: int) -> float:  # the fewest promotions the n-th new configuration implies
        told, spent = max(n - workers, 0), (n - 1) * c0
        for c in promo:
            p = max(int(math.floor(told / eta - 1e-6)), 0)
            spent += p * c
            told = max(p - (workers - 1), 0)
        return spent

    lo, hi = 1, 2  # the largest n with least_spent_before(n) < slack: it grows with n, so bisect
    while least_spent_before(hi) < slack:
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if least_spent_before(mid) < slack else (lo, mid)
    n_max = lo
    if not promo:
        return n_max, n_max
    # n + min((K - 1) n, (B - n c_0) / c_promo) is concave in n: its largest value over [0, n_max] is at an
    # end or where the two terms cross
    k, cheapest = len(promo), min(promo)
    cross = slack / (k * cheapest + c0)
    most = max(n + min(k * n, max(slack - n * c0, 0.0) / cheapest) for n in (0.0, float(n_max), min(cross, n_max)))
    return n_max, int(math.floor(most + 1e-9)) + 1
