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

**Budgets an objective offers.** The paper's rung budgets form the geometric ladder
``R eta^(k - s_max)``, k = 0..s_max. A table offers only some budgets (NAS-Bench-201: 12 and 200
epochs). ``rung_ladder`` maps each rung of the ladder to the offered fidelity nearest to it on a log
scale (ties go to the cheaper one) and merges rungs that land on the same fidelity; the schedule then
has ``K`` distinct rungs and Hyperband runs its ``K`` brackets s = K-1..0 with the formulas above and
``s_max = K - 1``. On a geometric grid with ratio ``eta`` nothing changes; with two fidelities the
schedule degrades to a bracket of two rungs (``eta`` configurations at the low fidelity, the best
``1/eta`` promoted) and a bracket of one rung (full evaluations only), whatever the budget ratio.
``describe_schedule`` says which budgets the paper's rungs asked for and which fidelities they got.
"""

from __future__ import annotations

import math

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


def ideal_budgets(budgets: tuple[float, ...], eta: float, lo: int, hi: int) -> list[float]:
    """The paper's rung budgets ``R eta^(k - s_max)``, k = 0..s_max, between ``budgets[lo]`` and ``budgets[hi]``."""
    r_max, r_min = budgets[hi], budgets[lo]
    s_max = int(math.floor(math.log(r_max / r_min) / math.log(eta) + 1e-9))
    return [r_max * eta ** (k - s_max) for k in range(s_max + 1)]


def rung_ladder(budgets: tuple[float, ...], eta: float, lo: int, hi: int) -> tuple[int, ...]:
    """Fidelity indices of the rungs, increasing: each ideal budget's nearest offered fidelity in
    ``[lo, hi]`` on a log scale (ties: the lower), repeats merged (module docstring)."""
    if not 0 <= lo <= hi < len(budgets):
        raise ValueError(f"the minimum budget {budgets[lo]:g} must not exceed the maximum {budgets[hi]:g}")
    ladder: list[int] = []
    for r in ideal_budgets(budgets, eta, lo, hi):
        dist = [abs(math.log(budgets[i] / r)) for i in range(lo, hi + 1)]
        i = lo + min(range(len(dist)), key=lambda j: (round(dist[j], 12), j))
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
    configurations (0 = ``eta^s``: one reaches the top)."""
    s = len(ladder) - 1 if s < 0 else s
    return bracket(ladder, eta, s, n or int(math.floor(eta**s + 1e-9)))


def hyperband_brackets(ladder: tuple[int, ...], eta: float) -> tuple[Bracket, ...]:
    """Hyperband's brackets s = s_max..0 (Algorithm 2) on the ``K``-rung ladder, ``s_max = K - 1``."""
    k = len(ladder)
    return tuple(bracket(ladder, eta, s, int(math.ceil(k * eta**s / (s + 1) - 1e-9))) for s in range(k - 1, -1, -1))


def describe_schedule(
    name: str, brackets: tuple[Bracket, ...], budgets: tuple[float, ...], unit: str, eta: float, ideal: list[float]
) -> str:
    """Which budgets the paper's rungs asked for, which fidelities they run at, and each bracket's rungs."""
    unit = f" {unit}" if unit else ""
    used = sorted({f for b in brackets for f, _ in b})
    lines = [
        f"{name}: eta={eta:g}; the paper's rung budgets {', '.join(f'{r:.4g}' for r in ideal)}{unit} run at the "
        f"fidelities {', '.join(f'{budgets[f]:g}' for f in used)}{unit}"
        + ("" if len(ideal) == len(used) else f" ({len(ideal)} rungs merged into {len(used)})"),
    ]
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
