"""Ensemble of MLP regressors, trained together with ``vmap`` (BANANAS' meta neural network).

White, Neiswanger & Savani, "BANANAS: Bayesian Optimization with Neural Architectures for
Neural Architecture Search" (AAAI 2021), Sections 4 and 5.1: an ensemble of ``M = 5``
feed-forward networks, 10 ReLU layers of width 20, Adam, mean-absolute-error loss. Each member
has its own random initialization and its own random order of the training set (section 4,
"Each meta neural network in the ensemble has a different random initialization of the
weights and a different random ordering of the training set"). The paper's code
(``naszilla/bananas``, ``MetaNeuralnet``) uses learning rate 0.01, Adam(beta1=0.9,
beta2=0.99), batch size 32, Glorot-uniform weights with zero biases, and 200 epochs as the class
default (150 in its NAS-Bench experiments; the BANANAS searcher passes 150).

Shapes and padding. Training data arrive padded to a bucket size ``P`` (see
``surrogates.padding``) with ``mask[P]``: padded rows never enter a loss, a mini-batch, or the
target normalization, so a fit on ``P`` rows with ``n`` real ones is the fit on those ``n`` rows
(same number of Adam steps per epoch as Keras: ``ceil(n / batch_size)``; mini-batches that
would hold only padding are skipped, i.e. params and optimizer state are left unchanged).

Targets are standardized with the masked mean/std before training and de-standardized in
``predict_ensemble`` (the paper's code fits raw validation errors in percent, about unit scale
on NAS-Bench-101; standardizing keeps lr = 0.01 meaningful on every benchmark, e.g. NB201
accuracies near 90 or HPOLib's -log MSE). ``weights`` multiply each example's loss (ReACTS'
covariate-shift weights, its eq. 20).

Everything is a pure function of one search (callers ``vmap`` over seeds).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp


@dataclasses.dataclass(frozen=True)
class MLPEnsembleConfig:
    num_members: int = 5
    num_layers: int = 10
    width: int = 20
    learning_rate: float = 0.01
    epochs: int = 200
    batch_size: int = 32
    loss: str = "mae"  # "mae" (paper) | "mse"
    beta2: float = 0.99  # Adam's second-moment decay in the paper's code (Keras default is 0.999)
    normalize_y: bool = True  # standardize targets with the masked mean/std (see module docstring)

    def __post_init__(self):
        if self.loss not in ("mae", "mse"):
            raise ValueError(f"MLPEnsembleConfig.loss must be 'mae' or 'mse', got {self.loss!r}")
        for name in ("num_members", "num_layers", "width", "epochs", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"MLPEnsembleConfig.{name} must be >= 1, got {getattr(self, name)}")


def _glorot(key, fan_in: int, fan_out: int, shape=None):
    limit = jnp.sqrt(6.0 / (fan_in + fan_out))
    return jax.random.uniform(key, shape or (fan_in, fan_out), jnp.float32, -limit, limit)


def _init_member(key: jax.Array, in_dim: int, cfg: MLPEnsembleConfig) -> dict:
    """Glorot-uniform weights and zero biases (Keras ``Dense`` defaults, as in the paper's code).

    The ``num_layers - 1`` width-to-width hidden layers are stacked into one array (fewer
    optimizer leaves); ``mlp_apply`` scans over them unrolled (faster to run on CPU).
    """
    k_in, k_h, k_out = jax.random.split(key, 3)
    w, nh = cfg.width, cfg.num_layers - 1
    return {
        "w_in": _glorot(k_in, in_dim, w),
        "b_in": jnp.zeros((w,), jnp.float32),
        "w_h": _glorot(k_h, w, w, (nh, w, w)),
        "b_h": jnp.zeros((nh, w), jnp.float32),
        "w_out": _glorot(k_out, w, 1),
        "b_out": jnp.zeros((1,), jnp.float32),
    }


def mlp_apply(params: dict, x: jax.Array) -> jax.Array:
    """One member on a batch: f32[B, F] -> f32[B] (``num_layers`` ReLU layers, linear output); full float32
    products on every backend (GPUs otherwise round them to TF32), also in the fit's gradients."""
    with jax.default_matmul_precision("highest"):
        h = jax.nn.relu(x @ params["w_in"] + params["b_in"])

        def layer(h, wb):
            return jax.nn.relu(h @ wb[0] + wb[1]), None

        h, _ = jax.lax.scan(layer, h, (params["w_h"], params["b_h"]), unroll=True)
        return (h @ params["w_out"] + params["b_out"])[:, 0]


def _row_hash(seed: jax.Array, rows: jax.Array) -> jax.Array:
    """uint32 pseudo-random values per row (murmur3 finalizer of ``seed ^ golden * row``); never 0xFFFFFFFF."""
    h = seed ^ (rows * jnp.uint32(0x9E3779B9))
    h = (h ^ (h >> 16)) * jnp.uint32(0x85EBCA6B)
    h = (h ^ (h >> 13)) * jnp.uint32(0xC2B2AE35)
    h = h ^ (h >> 16)
    return jnp.minimum(h, jnp.uint32(0xFFFFFFFE))


def init_ensemble(key: jax.Array, in_dim: int, cfg: MLPEnsembleConfig) -> dict:
    """Freshly initialized ensemble params (the ``fit_ensemble`` layout, targets unscaled)."""
    keys = jax.random.split(key, cfg.num_members)
    layers = jax.vmap(lambda k: _init_member(jax.random.split(k)[0], in_dim, cfg))(keys)
    return {"layers": layers, "y_mean": jnp.float32(0.0), "y_scale": jnp.float32(1.0)}


def adam_step(params, grads, m, v, t, lr: float, b1: float = 0.9, b2: float = 0.99, eps: float = 1e-8):
    """One bias-corrected Adam step (Kingma & Ba 2015, Algorithm 1; ``optax.adam``'s formula).

    Written as one ``tree.map`` that returns the new params and both moments: XLA then fuses the
    whole update of a leaf into one loop over it. ``optax.adam`` chains separate maps (moments,
    bias correction, scaling, apply) that ran ~1.3x slower inside the vmapped ensemble fit, where
    the update is a quarter of each step's time. ``t`` is the step count after this step (>= 1).
    """
    c1 = 1.0 - b1**t
    c2 = 1.0 - b2**t

    def leaf(p, g, m, v):
        m = b1 * m + (1.0 - b1) * g
        v = b2 * v + (1.0 - b2) * g * g
        return p - lr * (m / c1) / (jnp.sqrt(v / c2) + eps), m, v

    out = jax.tree.map(leaf, params, grads, m, v)
    return jax.tree.transpose(jax.tree.structure(params), jax.tree.structure((0, 0, 0)), out)


def _fit_member(key, x, y, mask, weights, cfg: MLPEnsembleConfig, init=None, num_epochs=None):
    """Adam on one member: ``num_epochs`` (default ``cfg.epochs``) passes over a fresh random
    order of the real rows, from ``init`` (warm start) or a fresh initialization."""
    p = x.shape[0]
    bs = cfg.batch_size
    nb = -(-p // bs)  # static number of mini-batches per epoch for the bucket size
    k_init, k_order = jax.random.split(key)
    params = _init_member(k_init, x.shape[1], cfg) if init is None else init
    zeros = jax.tree.map(jnp.zeros_like, params)
    opt_state = (zeros, zeros, jnp.float32(0.0))  # Adam's moments and step count

    def loss_fn(prm, idx, valid):
        err = mlp_apply(prm, x[idx]) - y[idx]
        per = jnp.abs(err) if cfg.loss == "mae" else jnp.square(err)
        w = jnp.where(valid, weights[idx], 0.0)
        # Keras averages the (weighted) loss over the rows of the batch
        return jnp.sum(w * per) / jnp.maximum(jnp.sum(valid), 1)

    def epoch(e, carry):
        prm, ost = carry
        k = seeds[e]
        # real rows first, in random order; padded rows after (they land in batches never run)
        # a hash of (epoch seed, row index) per row, so the order of the real rows does not depend
        # on how much padding follows them (a padded fit equals the unpadded fit); an integer hash
        # instead of a threefry call per row keeps the compiled program small
        u = _row_hash(k, jnp.arange(p, dtype=jnp.uint32))
        order = jnp.argsort(jnp.where(mask, u, jnp.uint32(0xFFFFFFFF)))
        order = jnp.concatenate([order, jnp.zeros((nb * bs - p,), order.dtype)])
        valid = jnp.concatenate([mask[order[:p]], jnp.zeros((nb * bs - p,), bool)])

        def step(i, c):
            prm, (m, v, t) = c
            idx = jax.lax.dynamic_slice(order, (i * bs,), (bs,))
            ok = jax.lax.dynamic_slice(valid, (i * bs,), (bs,))
            grads = jax.grad(loss_fn)(prm, idx, ok)
            prm, m, v = adam_step(prm, grads, m, v, t + 1.0, cfg.learning_rate, 0.9, cfg.beta2)
            return prm, (m, v, t + 1.0)

        # only the batches that hold real rows (each holds at least one, as Keras' batches): a
        # dynamic trip count (a while loop) skips the padding's compute, also under vmap, where
        # seeds with equal data sizes share the count
        return jax.lax.fori_loop(0, num_real_batches, step, (prm, ost))

    num_real_batches = jnp.minimum((jnp.sum(mask) + bs - 1) // bs, nb)
    seeds = jax.random.bits(k_order, (cfg.epochs,), jnp.uint32)
    if num_epochs is None:
        params, _ = jax.lax.fori_loop(0, cfg.epochs, epoch, (params, opt_state))
    else:  # a traced count (at most cfg.epochs): one program serves cold and warm fits
        params, _ = jax.lax.fori_loop(0, jnp.minimum(num_epochs, cfg.epochs), epoch, (params, opt_state))
    return params


def clean_targets(y: jax.Array, mask: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(y f32[P] with zeros outside the mask, mask bool[P] without the non-finite targets)."""
    mask = mask & jnp.isfinite(y)
    return jnp.where(mask, y, 0.0).astype(jnp.float32), mask


def target_stats(y: jax.Array, mask: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(mean, scale) that standardize the targets: the mean and population std of ``y`` over the
    ``mask`` rows (``y`` zero elsewhere: ``clean_targets``), a scale of 1 where the std is below 1e-8.

    Float sums depend on the array's length as well as its values (XLA's CPU reduction is ordered
    by it): a fit on more padded rows can differ in the last bits (``nas.searchers.bananas``
    computes these over its padded bucket's length).
    """
    n = jnp.maximum(jnp.sum(mask), 1)
    y_mean = jnp.sum(y) / n
    std = jnp.sqrt(jnp.sum(jnp.where(mask, jnp.square(y - y_mean), 0.0)) / n)
    return y_mean, jnp.where(std > 1e-8, std, 1.0)


def fit_ensemble(
    key: jax.Array,
    x: jax.Array,
    y: jax.Array,
    mask: jax.Array,
    cfg: MLPEnsembleConfig,
    weights: jax.Array | None = None,
    init_params: dict | None = None,
    num_epochs: jax.Array | None = None,
    y_stats: tuple[jax.Array, jax.Array] | None = None,
) -> dict:
    """Trains ``cfg.num_members`` MLPs on the rows where ``mask`` is True.

    Args:
      key: PRNG key; member ``m`` uses ``split(key, M)[m]`` for its init and data order.
      x: f32[P, F] features (padded rows arbitrary).
      y: f32[P] targets (padded or non-finite rows are ignored).
      mask: bool[P] real rows.
      cfg: static configuration.
      weights: optional f32[P] per-example loss weights (default 1).
      init_params: optional params of an earlier ``fit_ensemble`` to continue from (warm start,
        e.g. ReACTS' simulator between steps); a fresh Adam state; targets are re-standardized
        with the current data.
      num_epochs: optional (traced) int, at most ``cfg.epochs``: epochs of this fit.
      y_stats: optional ``(mean, scale)`` to standardize the targets with, in place of
        ``target_stats(y, mask)`` (with ``cfg.normalize_y``).
    Returns:
      params pytree: ``{"layers": per-member stacked layers, "y_mean": f32[], "y_scale": f32[]}``.
    """
    if x.ndim != 2 or y.shape != (x.shape[0],) or mask.shape != (x.shape[0],):
        raise ValueError(f"fit_ensemble expects x[P, F], y[P], mask[P]; got {x.shape}, {y.shape}, {mask.shape}")
    x = x.astype(jnp.float32)
    y, mask = clean_targets(y, mask)
    weights = jnp.ones_like(y) if weights is None else jnp.asarray(weights, jnp.float32)
    if weights.shape != y.shape:
        raise ValueError(f"fit_ensemble: weights must be f32[{y.shape[0]}], got {weights.shape}")
    if not cfg.normalize_y:
        y_mean, y_scale = jnp.float32(0.0), jnp.float32(1.0)
    elif y_stats is None:
        y_mean, y_scale = target_stats(y, mask)
    else:
        y_mean, y_scale = y_stats
    yn = jnp.where(mask, (y - y_mean) / y_scale, 0.0)
    keys = jax.random.split(key, cfg.num_members)
    init = None if init_params is None else init_params["layers"]
    layers = jax.vmap(lambda k, i: _fit_member(k, x, yn, mask, weights, cfg, i, num_epochs))(keys, init)
    return {"layers": layers, "y_mean": y_mean, "y_scale": y_scale}


def predict_ensemble(params: dict, x: jax.Array, cfg: MLPEnsembleConfig) -> jax.Array:
    """Per-member predictions in the target's units: f32[M, F] -> f32[E, M]."""
    del cfg  # the architecture is in the params' shapes
    out = jax.vmap(lambda layers: mlp_apply(layers, x.astype(jnp.float32)))(params["layers"])
    return out * params["y_scale"] + params["y_mean"]


def ensemble_mean_std(preds: jax.Array) -> tuple[jax.Array, jax.Array]:
    """BANANAS eq. (1): mean of member predictions and their sample std (``M - 1`` denominator)."""
    m = preds.shape[0]
    mean = jnp.mean(preds, axis=0)
    std = jnp.sqrt(jnp.sum(jnp.square(preds - mean), axis=0) / max(m - 1, 1))
    return mean, std
