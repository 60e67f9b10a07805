"""The deep-kernel GP of TNAS (Shala, Elsken, Hutter & Grabocka, 2023, "Transfer NAS with meta-learned
Bayesian surrogates", Section 3.1-3.3).

Kernel between architecture ``x`` on task ``D`` and ``x'`` on task ``D'`` (the paper's eq. under
"Putting it all together", eq. 2 in this library's docs):

    k(x, D, x', D'; w) = k_M52( xi([psi(x), phi(D)]), xi([psi(x'), phi(D')]); w_k )

- ``psi``: architecture encoder (``surrogates.arch_encoders``: bidirectional D-VAE DAG encoder for cells,
  MLP on the one-hot encoding for flat spaces; ``"matrix"``: no encoder, the space's adjacency-matrix
  encoding itself, the paper's "TNAS (no Graph Encoder)" ablation of Section 5.1);
- ``phi``: dataset encoder (``surrogates.set_encoder``: a Set Transformer over the task's observed
  (encoding, score) pairs, or with ``dataset_input="data"`` two stacked ones over its raw data samples;
  optional: ``use_dataset_encoder=False`` drops it, the ablation "none");
- ``xi``: an MLP on the concatenation; ``k_M52`` the Matern-5/2 kernel with amplitude and length scale.

GP (eq. 3): targets standardized over the real rows; ``K = k(X, X) + s_n^2 I``; the negative log marginal
likelihood ``1/2 y^T K^-1 y + 1/2 log|K| + n/2 log 2 pi`` (eq. 3 up to the factor 1/2 and the constant).
Data come padded to ``P`` rows with ``mask[P]``; padded rows get an identity block of ``K`` and zero
targets, so the likelihood and posterior are those of the real rows (as ``surrogates.gp``).

Parameters ``w`` are one pytree ``{"net": flax params of psi, phi, xi, "kernel": {log_ls, log_amp,
log_noise}}``, so REPTILE (``surrogates.reptile``) and fine-tuning treat all of ``w`` alike.

Linear algebra is ``surrogates.linalg`` (plain-JAX blocked Cholesky with its inverse ``L^-1``, no LAPACK
custom call): eq. 3 through ``linalg.gaussian_nll`` (its gradient in ``K`` is R&W eq. 5.9, a custom VJP),
the posterior's solves as products with ``L^-1``.
"""

from __future__ import annotations

import dataclasses

import flax.linen as nn
import jax
import jax.numpy as jnp
import optax

from surrogates import arch_encoders as ae
from surrogates import linalg
from surrogates.set_encoder import DataSetEncoder, SetEncoder

ARCH_ENCODERS = ("dag", "mlp", "matrix")
DATASET_INPUTS = ("observations", "data")  # what phi reads: the observed (encoding, score) pairs, or raw data
DAG_FAMILIES = ("nb201", "nasbench_graph", "nb101")  # the cell spaces the DAG encoder reads


@dataclasses.dataclass(frozen=True)
class DeepKernelConfig:
    """Static shape of the deep kernel (hashable: it is closed over by compiled code).

    Attributes:
      arch_encoder: ``"dag"`` (op-on-node DAG, D-VAE encoder), ``"mlp"`` (one-hot MLP) or ``"matrix"``
        (no encoder: psi(x) is the adjacency-matrix encoding, ``matrix_kind``; ``hidden`` and ``arch_dim`` unused).
      dag: the DAG encoder's cells: ``"nb201"`` (one fixed DAG), ``"nasbench_graph"`` (9 link structures) or
        ``"nb101"`` (one DAG per string).
      num_features: length of the one-hot encoding (MLP input and set-element features).
      hidden, arch_dim: psi's hidden width and output size L.
      use_dataset_encoder: include phi (False: ``xi(psi(x))``, the "no dataset encoder" ablation).
      dataset_input: phi's set: ``"observations"`` (the task's (one-hot, score) pairs) or ``"data"`` (raw
        data samples of tasks that have them, ``surrogates.task_data``: ``data_rows`` rows of at most
        ``data_columns`` features each).
      set_dim, set_inducing, set_heads, set_blocks, set_dim_out: phi's width, inducing points, heads,
        ISAB blocks and output size K.
      xi_hidden, out_dim: xi's hidden layers and output size M.
      min_noise, jitter: noise variance floor (standardized units) and diagonal jitter.
    """

    arch_encoder: str = "dag"
    dag: str = "nb201"
    num_features: int = 30
    hidden: int = 32
    arch_dim: int = 16
    use_dataset_encoder: bool = True
    dataset_input: str = "observations"
    data_rows: int = 64
    data_columns: int = 16
    set_dim: int = 32
    set_inducing: int = 8
    set_heads: int = 4
    set_blocks: int = 2
    set_dim_out: int = 16
    xi_hidden: tuple[int, ...] = (64, 64)
    out_dim: int = 16
    min_noise: float = 1e-4
    jitter: float = 1e-6

    def __post_init__(self):
        if self.arch_encoder not in ARCH_ENCODERS:
            raise ValueError(f"arch_encoder must be one of {list(ARCH_ENCODERS)}, got {self.arch_encoder!r}")
        if self.dataset_input not in DATASET_INPUTS:
            raise ValueError(f"dataset_input must be one of {list(DATASET_INPUTS)}, got {self.dataset_input!r}")
        if self.dag not in DAG_FAMILIES:
            raise ValueError(f"dag must be one of {list(DAG_FAMILIES)}, got {self.dag!r}")
        object.__setattr__(self, "xi_hidden", tuple(int(h) for h in self.xi_hidden))
        sizes = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.type in ("int", int)}
        bad = {k: v for k, v in sizes.items() if isinstance(v, bool) or not isinstance(v, int) or v < 1}
        if any(h < 1 for h in self.xi_hidden):
            bad["xi_hidden"] = self.xi_hidden
        if bad:
            raise ValueError(f"the deep kernel's sizes must be integers >= 1, got {bad}")
        if not (0.0 < self.min_noise < float("inf") and 0.0 <= self.jitter < float("inf")):
            raise ValueError(f"need min_noise > 0 and jitter >= 0 (finite), got {self.min_noise}, {self.jitter}")


def dag_family(space) -> str | None:
    """The DAG encoder's cell family of ``space`` (one of ``DAG_FAMILIES``), None for other spaces."""
    name = getattr(space, "name", "")
    if name in ("nb201", "nb101"):
        return name
    return "nasbench_graph" if name.startswith("nasbench_graph") else None


def default_config(space) -> DeepKernelConfig:
    """The deep kernel of a space without a meta-learned model: the DAG encoder for the cell spaces it reads
    (NB201, NAS-Bench-Graph, NB101), the one-hot MLP otherwise."""
    family, num_features = dag_family(space), space.feature_dim("onehot")
    if family is None:
        return DeepKernelConfig(arch_encoder="mlp", num_features=num_features)
    return DeepKernelConfig(arch_encoder="dag", dag=family, num_features=num_features)


def matrix_kind(space) -> str:
    """The feature kind of the ``"matrix"`` encoder: the space's adjacency matrix and op list
    (``"adjacency"``: NB101's edge bits and op one-hots; NB201's fixed DAG, its edges' op one-hots), else one-hot."""
    return "adjacency" if "adjacency" in getattr(space, "feature_kinds", ()) else "onehot"


def psi_dim(cfg: DeepKernelConfig, space) -> int:
    """The length of ``psi(x)``: ``arch_dim``, or the matrix encoding's length (``"matrix"``)."""
    return space.feature_dim(matrix_kind(space)) if cfg.arch_encoder == "matrix" else cfg.arch_dim


def arch_inputs(cfg: DeepKernelConfig, space, tokens: jax.Array) -> jax.Array:
    """psi's input for one string: node types (``"dag"``; NAS-Bench-Graph: its link index first, of the
    string's canonical form; NB101: the pruned edge bits first), the one-hot encoding (``"mlp"``) or the
    adjacency-matrix encoding (``"matrix"``)."""
    if cfg.arch_encoder == "mlp":
        return space.features(tokens, "onehot")
    if cfg.arch_encoder == "matrix":
        return space.features(tokens, matrix_kind(space))
    if dag_family(space) != cfg.dag:
        raise ValueError(
            f"the DAG encoder reads {list(DAG_FAMILIES)} cells; this model's is {cfg.dag!r}, "
            f"the space {getattr(space, 'name', '')!r}"
        )
    if cfg.dag == "nb201":
        return ae.nb201_node_types(tokens)
    if cfg.dag == "nb101":
        return ae.nb101_inputs(tokens)
    return ae.nasbench_graph_inputs(space.canonical_string(tokens), space.op_names)


class DeepKernelNet(nn.Module):
    """``xi([psi(x), phi(D)])`` for a batch of architectures of ONE task: f32[M, out_dim].

    ``psi_only`` returns ``psi(x)``; ``head`` maps precomputed ``psi(x)`` through phi and xi (meta-test
    keeps psi fixed and computes it once for every string of the space).
    """

    cfg: DeepKernelConfig

    def setup(self):
        c = self.cfg
        if c.arch_encoder == "matrix":
            self.psi = lambda x: x.astype(jnp.float32)  # no encoder: the matrix encoding goes to xi as it is
        elif c.arch_encoder == "mlp":
            self.psi = ae.MLPEncoder(c.hidden, c.arch_dim)
        elif c.dag == "nb201":
            self.psi = ae.DAGEncoder(ae.nb201_adjacency(), ae.NB201_NUM_TYPES, c.hidden, c.arch_dim)
        elif c.dag == "nb101":  # one DAG per string: built from its edge bits in psi_only
            self.psi = ae.DAGEncoder(None, ae.NB101_NUM_TYPES, c.hidden, c.arch_dim)
        else:  # one DAG per link structure: looked up per string in psi_only
            self.psi = ae.DAGEncoder(None, ae.NBGRAPH_NUM_TYPES, c.hidden, c.arch_dim)
        if c.use_dataset_encoder:
            encoder = DataSetEncoder if c.dataset_input == "data" else SetEncoder
            self.phi = encoder(c.set_dim, c.set_inducing, c.set_heads, c.set_blocks, c.set_dim_out)
        self.xi = [nn.Dense(h) for h in c.xi_hidden] + [nn.Dense(c.out_dim)]

    def __call__(self, arch_x, set_features, set_scores, set_mask):
        return self.head(self.psi_only(arch_x), set_features, set_scores, set_mask)

    def psi_only(self, arch_x):
        if self.cfg.arch_encoder == "dag" and self.cfg.dag == "nasbench_graph":
            adjacency = jnp.asarray(ae.nasbench_graph_adjacencies(), jnp.float32)[arch_x[:, 0]]
            return self.psi(arch_x[:, 1:], adjacency=adjacency)
        if self.cfg.arch_encoder == "dag" and self.cfg.dag == "nb101":
            types, adjacency = ae.nb101_split(arch_x)
            return self.psi(types, adjacency=adjacency)
        return self.psi(arch_x)

    def head(self, z, set_features, set_scores, set_mask):
        if self.cfg.use_dataset_encoder:
            d = self.phi(set_features, set_scores, set_mask)
            z = jnp.concatenate([z, jnp.broadcast_to(d, (z.shape[0], d.shape[0]))], axis=-1)
        return self._xi(z)

    def pairs(self, arch_x, task, set_features, set_scores, set_mask):
        """Rows of SEVERAL tasks: row ``i`` is architecture ``arch_x[i]`` on task ``task[i]``, whose set is
        ``set_*[task[i]]`` (the sets of all tasks stacked on a leading axis)."""
        z = self.psi_only(arch_x)
        if self.cfg.use_dataset_encoder:
            d = jnp.stack(
                [self.phi(*(a[q] for a in (set_features, set_scores, set_mask))) for q in range(len(set_mask))]
            )
            z = jnp.concatenate([z, d[task]], axis=-1)
        return self._xi(z)

    def _xi(self, z):
        for layer in self.xi[:-1]:
            z = nn.relu(layer(z))
        return self.xi[-1](z)


def uses_data(cfg: DeepKernelConfig) -> bool:
    """Whether phi reads raw data samples (the set is ``(x[R, C], y[R], mask[R, C])``, fixed per task)."""
    return cfg.use_dataset_encoder and cfg.dataset_input == "data"


def init_params(key: jax.Array, cfg: DeepKernelConfig, arch_x: jax.Array, set_features: jax.Array) -> dict:
    """Random ``w``; ``arch_x`` / ``set_features`` are example inputs (one task) fixing the shapes: set
    elements' features f32[S, F], or with raw data (``uses_data``) the samples' features f32[R, C]."""
    s = set_features.shape[0]
    mask = jnp.ones(set_features.shape if uses_data(cfg) else (s,), bool)
    net = DeepKernelNet(cfg).init(key, arch_x, set_features, jnp.zeros((s,)), mask)
    kernel = {"log_ls": jnp.float32(0.0), "log_amp": jnp.float32(0.0), "log_noise": jnp.log(jnp.float32(0.1))}
    return {"net": net, "kernel": kernel}


def arch_embeddings(w, cfg: DeepKernelConfig, arch_x: jax.Array) -> jax.Array:
    """``psi(x)`` f32[M, psi_dim]."""
    return DeepKernelNet(cfg).apply(w["net"], arch_x, method=DeepKernelNet.psi_only)


def embed(w, cfg, arch_x, set_features, set_scores, set_mask, psi_given: bool = False):
    """``xi([psi(x), phi(D)])``; with ``psi_given`` (static) ``arch_x`` already holds ``psi(x)``."""
    net = DeepKernelNet(cfg)
    if psi_given:
        return net.apply(w["net"], arch_x, set_features, set_scores, set_mask, method=DeepKernelNet.head)
    return net.apply(w["net"], arch_x, set_features, set_scores, set_mask)


def matern52(z1: jax.Array, z2: jax.Array, kernel: dict) -> jax.Array:
    """``amp (1 + sqrt5 r + 5/3 r^2) exp(-sqrt5 r)``, ``r = ||z1 - z2|| / ls``: f32[A, B]."""
    d2 = jnp.sum(z1 * z1, -1)[:, None] + jnp.sum(z2 * z2, -1)[None, :] - 2.0 * jnp.matmul(z1, z2.T, precision="highest")
    r = jnp.sqrt(jnp.maximum(d2, 0.0) + 1e-12) / jnp.exp(kernel["log_ls"])
    s5r = jnp.sqrt(5.0) * r
    return jnp.exp(kernel["log_amp"]) * (1.0 + s5r + 5.0 / 3.0 * r * r) * jnp.exp(-s5r)


def standardize(y: jax.Array, mask: jax.Array):
    """Targets standardized over the real rows (zeros elsewhere), their mean and scale."""
    n = jnp.maximum(jnp.sum(mask), 1)
    mean = jnp.sum(jnp.where(mask, y, 0.0)) / n
    std = jnp.sqrt(jnp.sum(jnp.where(mask, jnp.square(y - mean), 0.0)) / n)
    scale = jnp.where(std > 1e-8, std, 1.0)
    return jnp.where(mask, (y - mean) / scale, 0.0), mean, scale


def _gram(w, cfg, z, mask):
    p = z.shape[0]
    noise = cfg.min_noise + jnp.exp(w["kernel"]["log_noise"])
    k = matern52(z, z, w["kernel"]) + (noise + cfg.jitter) * jnp.eye(p)
    return jnp.where(mask[:, None] & mask[None, :], k, jnp.eye(p, dtype=k.dtype))


def neg_log_marginal_likelihood(w, cfg, arch_x, y, mask, set_features, set_scores, set_mask, psi_given=False):
    """Eq. 3 on one task's padded rows: ``1/2 y^T K^-1 y + 1/2 log|K| + n/2 log 2 pi`` (y standardized here)."""
    ys, _, _ = standardize(y, mask)
    z = embed(w, cfg, arch_x, set_features, set_scores, set_mask, psi_given)
    # the gradient in K is R&W eq. 5.9 (linalg's custom VJP), not backpropagation through the factorization
    return linalg.gaussian_nll(_gram(w, cfg, z, mask), ys, mask)


def neg_log_marginal_likelihood_pairs(w, cfg, arch_x, y, mask, task, set_features, set_scores, set_mask):
    """Eq. 3 on (architecture, task) pairs of several tasks (``DeepKernelNet.pairs``; Algorithm 1, line 3)."""
    ys, _, _ = standardize(y, mask)
    z = DeepKernelNet(cfg).apply(w["net"], arch_x, task, set_features, set_scores, set_mask, method=DeepKernelNet.pairs)
    return linalg.gaussian_nll(_gram(w, cfg, z, mask), ys, mask)


FINETUNE_SCOPES = ("net", "kernel")


def finetune(
    w,
    cfg,
    arch_x,
    y,
    mask,
    set_features,
    set_scores,
    set_mask,
    steps: int,
    learning_rate: float,
    psi_given=False,
    scope: str = "net",
):
    """``steps`` Adam steps on eq. 3 from ``w`` (meta-test adaptation to the target); NaN gradients are
    zeroed so a failed Cholesky never poisons the parameters. ``scope`` (static): ``"net"`` adapts every
    parameter that reaches the loss (with ``psi_given``: phi, xi and the kernel hyperparameters; psi only
    when it is computed here), ``"kernel"`` only the GP hyperparameters (length scale, amplitude, noise)."""
    if scope not in FINETUNE_SCOPES:
        raise ValueError(f"finetune scope must be one of {list(FINETUNE_SCOPES)}, got {scope!r}")
    if steps == 0:
        return w
    opt = optax.adam(learning_rate)
    grad = jax.grad(neg_log_marginal_likelihood)

    def step(carry, _):
        p, st = carry
        g = grad(p, cfg, arch_x, y, mask, set_features, set_scores, set_mask, psi_given)
        g = jax.tree.map(lambda a: jnp.where(jnp.isfinite(a), a, 0.0), g)
        if scope == "kernel":  # zero gradients: Adam leaves those parameters exactly where they are
            g = {"net": jax.tree.map(jnp.zeros_like, g["net"]), "kernel": g["kernel"]}
        upd, st = opt.update(g, st, p)
        return (optax.apply_updates(p, upd), st), None

    (w, _), _ = jax.lax.scan(step, (w, opt.init(w)), None, length=steps)
    return w


def posterior(w, cfg, arch_x, y, mask, arch_new, set_features, set_scores, set_mask, psi_given=False):
    """Posterior mean and std (target units) of the latent function at ``arch_new[M, ...]`` (paper eqs. 1-2)."""
    ys, y_mean, y_scale = standardize(y, mask)
    z = embed(w, cfg, arch_x, set_features, set_scores, set_mask, psi_given)
    z_new = embed(w, cfg, arch_new, set_features, set_scores, set_mask, psi_given)
    # L^-1 from the factorization makes the solves for every candidate one matmul (meta-test scores every
    # string of the space: a row-by-row substitution over [n, M] right-hand sides would dominate the step)
    _, inv = linalg.cholesky_with_inverse(_gram(w, cfg, z, mask))
    k_star = jnp.where(mask[:, None], matern52(z, z_new, w["kernel"]), 0.0)
    a = jnp.matmul(inv, ys, precision="highest")
    v = jnp.matmul(inv, k_star, precision="highest")
    mean = jnp.matmul(v.T, a, precision="highest")
    var = jnp.maximum(jnp.exp(w["kernel"]["log_amp"]) - jnp.sum(v * v, axis=0), 0.0)
    return mean * y_scale + y_mean, jnp.sqrt(var) * y_scale
