"""Kernels on architecture encodings for the exact GP (``surrogates.gp``).

BANANAS (White, Neiswanger & Savani, 2021), Section 5.1 "Bayesian optimization with a GP model": the GP baseline's
distance between two cells is "the sum of the Hamming distances between the adjacency matrices
and the list of operations"; the ablation (its Figure 4) also uses the Hamming distance between
path encodings. Both are Hamming distances between binary feature vectors of a space
(``space.features(tokens, "adjacency" | "path" | "onehot")``):

    d_H(x, x') = sum_i |x_i - x'_i|          (= ||x - x'||^2 for binary x)

(with one-hot ops the op-list part counts 2 per differing op; the adjacency part counts 1 per
differing edge.) Kernels, with amplitude ``sigma_f^2`` and length scale ``l``:

- ``"hamming"``:  ``sigma_f^2 exp(-d_H / l)``. For binary features this is the RBF kernel on the
  feature vectors, so it is positive definite (an RBF of the *squared* Hamming distance need not be).
- ``"rbf"``:      ``sigma_f^2 exp(-||x - x'||^2 / (2 l^2))`` on real feature vectors.
- ``"matern52"``: ``sigma_f^2 (1 + sqrt5 r / l + 5 r^2 / (3 l^2)) exp(-sqrt5 r / l)``, ``r = ||x - x'||``.

Functions take feature matrices ``x1[A, F]``, ``x2[B, F]`` and return ``[A, B]``.
"""

from __future__ import annotations

import jax.numpy as jnp

KERNELS = ("hamming", "rbf", "matern52")


def hamming_distance(x1, x2):
    """``[A, B]`` L1 distances; the number of differing bits for binary features."""
    return jnp.sum(jnp.abs(x1[:, None, :] - x2[None, :, :]), axis=-1)


def sq_euclidean(x1, x2):
    d = jnp.sum(x1 * x1, -1)[:, None] + jnp.sum(x2 * x2, -1)[None, :] - 2.0 * jnp.matmul(x1, x2.T, precision="highest")
    return jnp.maximum(d, 0.0)


def distance(kind: str, x1, x2):
    """The distance each kernel is a function of (Hamming for ``hamming``, Euclidean otherwise)."""
    if kind == "hamming":
        return hamming_distance(x1, x2)
    if kind in ("rbf", "matern52"):
        return jnp.sqrt(sq_euclidean(x1, x2) + 1e-12)
    raise ValueError(f"unknown kernel {kind!r}; choose from {list(KERNELS)}")


def kernel_matrix(kind: str, x1, x2, lengthscale, amplitude):
    """``amplitude * k(x1, x2; lengthscale)``: f32[A, B]."""
    if kind == "hamming":
        return amplitude * jnp.exp(-hamming_distance(x1, x2) / lengthscale)
    if kind == "rbf":
        return amplitude * jnp.exp(-0.5 * sq_euclidean(x1, x2) / lengthscale**2)
    if kind == "matern52":
        r = jnp.sqrt(sq_euclidean(x1, x2) + 1e-12) / lengthscale
        s5r = jnp.sqrt(5.0) * r
        return amplitude * (1.0 + s5r + 5.0 / 3.0 * r * r) * jnp.exp(-s5r)
    raise ValueError(f"unknown kernel {kind!r}; choose from {list(KERNELS)}")
