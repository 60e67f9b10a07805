"""Checks of NASBOT's OTMANN distance that are too slow for the tests (docs/reference/nasbot_alphax.md):

    python -m scripts.experiments.otmann_checks --pairs=300

1. The transport solver's static number of augmentations: on all pairs of ``--pairs`` random networks of
   each readable space, the fewest augmentations that give the value of 64 (the default is rows + columns).
2. Against an exact linear program (scipy HiGHS) on ``--lp_pairs`` random pairs per space: the largest
   error relative to ``M1 + M2``.
3. Whether ``exp(-s d / mean(d))`` (and the same with ``d_bar``) is positive semi-definite on the
   ``--pairs`` networks: its smallest and largest eigenvalue for a few ``s``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from absl import flags

from nas.experiment import cli

_PAIRS = flags.DEFINE_integer("pairs", 300, "random networks per space (all their pairs are checked)")
_LP_PAIRS = flags.DEFINE_integer("lp_pairs", 100, "pairs per space compared with the exact LP")
_NU_STR = flags.DEFINE_float("nu_str", 0.4, "OTMANN's structural coefficient")
_SEED = flags.DEFINE_integer("seed", 5, "PRNG seed of the random networks")


def exact_otmann(p1, p2, mismatch, nu_str: float, nu_nas: float = 1.0) -> float:
    """OTMANN of two prepared networks as a linear program (scipy HiGHS): eq. 3 in its partial form,
    ``min sum Z (C - 2 nu_nas) + nu_nas (M1 + M2)`` under the row and column capacities."""
    from scipy.optimize import linprog

    from surrogates import otmann

    c = np.asarray(otmann.cost_matrix(p1, p2, mismatch, nu_str), np.float64)
    c = np.where(np.isfinite(c), c, 1e9)
    m1, m2 = np.asarray(p1.masses, np.float64), np.asarray(p2.masses, np.float64)
    n1, n2 = c.shape
    rows = np.kron(np.eye(n1), np.ones((1, n2)))
    cols = np.kron(np.ones((1, n1)), np.eye(n2))
    res = linprog((c - 2 * nu_nas).ravel(), A_ub=np.vstack([rows, cols]), b_ub=np.concatenate([m1, m2]), method="highs")
    return float(res.fun + nu_nas * (m1.sum() + m2.sum()))


def spaces():
    from spaces.benchmarks.hpobench import SPACE as HPOBENCH
    from spaces.benchmarks.hpolib import SPACE as HPOLIB
    from spaces.nb101 import NB101Space
    from spaces.nb201 import SPACE as NB201

    return [NB201, NB101Space(), HPOLIB, HPOBENCH]


def main(argv):
    del argv
    from surrogates import otmann
    from surrogates.layer_graphs import network_reader

    nu = _NU_STR.value
    for space in spaces():
        reader = network_reader(space)
        mm = jnp.asarray(reader.mismatch)
        toks = jax.vmap(space.sample)(jax.random.split(jax.random.PRNGKey(_SEED.value), _PAIRS.value))
        nets = jax.vmap(lambda t, r=reader: otmann.prepare(r.read(t)))(toks)

        def matrix(steps, nets=nets, mm=mm):
            return jax.jit(lambda a, b: otmann.otmann_matrix(a, b, mm, nu_str=nu, augmentations=steps))(nets, nets)

        ref, ref_bar = matrix(64)
        enough = next(s for s in range(1, 65) if bool(jnp.all(matrix(s)[0] == ref)))
        d, d_bar = matrix(None)
        total = np.asarray(nets.masses, np.float64).sum(1)
        n = _PAIRS.value
        worst = 0.0
        for k in range(min(_LP_PAIRS.value, n // 2)):
            i, j = 2 * k, 2 * k + 1
            want = exact_otmann(otmann.row(nets, i), otmann.row(nets, j), mm, nu)
            worst = max(worst, abs(float(d[i, j]) - want) / (total[i] + total[j]))
        print(
            f"{space.name}: {n * n} pairs, {enough} augmentations give the value of 64 (default "
            f"{2 * nets.masses.shape[1]}); largest |d - LP| / (M1 + M2) over {min(_LP_PAIRS.value, n // 2)} pairs "
            f"{worst:.1e}; max |d(x, x)| {float(jnp.max(jnp.abs(jnp.diag(d_bar)))):.1e}, "
            f"max |d_bar(x, y) - d_bar(y, x)| {float(jnp.max(jnp.abs(d_bar - d_bar.T))):.1e}"
        )
        for name, m in (("d", np.asarray(d, np.float64)), ("d_bar", np.asarray(d_bar, np.float64))):
            m = (m + m.T) / 2
            for s in (0.1, 1.0, 3.0, 10.0):
                ev = np.linalg.eigvalsh(np.exp(-s * m / m.mean()))
                print(f"  exp(-{s} {name} / mean): eigenvalues {ev.min():.2e} .. {ev.max():.2e}")
    return 0


if __name__ == "__main__":
    cli.run(main)
