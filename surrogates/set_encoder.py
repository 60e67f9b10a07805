"""Dataset encoders phi of TNAS: Set Transformers over a task's observed (encoding, score) pairs or over
its raw data samples.

Lee, Lee, Kim, Kosiorek, Choi & Teh (2019), "Set Transformer", Section 3: multihead attention blocks

    MAB(X, Y) = LayerNorm(H + rFF(H)),   H = LayerNorm(X + Multihead(X, Y, Y))      (eq. 6)
    ISAB_m(X) = MAB(X, MAB(I, X))   with m learned inducing points I               (eqs. 9-10)
    PMA_k(Z)  = MAB(S, rFF(Z))      with k learned seed vectors S                  (eq. 11)

as TNAS uses it (Shala, Elsken, Hutter & Grabocka, 2023, Section 3.1; the architecture of Lee et al.
2021, MetaD2A). **Deviation from the paper**: TNAS encodes a dataset from its raw data samples (images per
class, two stacked set transformers). The tasks of the tabular suites (NAS-Bench-201, HPOBench, HPOLib,
NAS-Bench-Graph) exist here only as tables (no images, no data), so the set describing a task is its
observed (architecture one-hot, standardized validation score) pairs: random subsets of a source task's
table during meta-training, the target's queries so far at meta-test. The encoder then says "which
architectures are good on this task", the information a data-based encoder is meant to predict.

Where a task's raw data exist (the real-training tasks ``mlp/<dataset>``: scikit-learn's diabetes, UCI
Boston and Naval), ``DataSetEncoder`` reads data samples as the paper does, with tabular rows in place of
images: the data sets have different numbers of columns, so each column is one set of (x_rc, y_r) pairs
over the sampled rows r, encoded by one shared ``SetEncoder``, and a second set transformer pools the
columns (two stacked set transformers, as in the paper and in Dataset2Vec, Jomaa et al., 2021). The
encoding is invariant to the order of the rows and of the columns.

Sets are padded to a fixed size with ``mask[S]``; padded elements never act as keys, so the encoding of
a set is invariant to padding and to the order of its elements (tested). An all-masked set encodes as
the encoding of the seed vectors alone (defined, never NaN). Functions take one set; callers vmap.
"""

from __future__ import annotations

import flax.linen as nn
import jax.numpy as jnp


class MAB(nn.Module):
    """Multihead attention block: queries x f32[Q, D], keys y f32[K, D], key mask bool[K] -> f32[Q, D]."""

    dim: int
    heads: int = 4

    @nn.compact
    def __call__(self, x, y, key_mask=None):
        mask = None if key_mask is None else key_mask[None, None, :]  # [heads, Q, K] broadcast
        att = nn.MultiHeadDotProductAttention(num_heads=self.heads, qkv_features=self.dim, out_features=self.dim)
        h = nn.LayerNorm()(x + _safe_attention(att, x, y, mask))
        return nn.LayerNorm()(h + nn.Dense(self.dim)(nn.relu(nn.Dense(self.dim)(h))))


def _safe_attention(att, x, y, mask):
    """Attention whose rows with no unmasked key give 0 instead of a uniform average over padding."""
    out = att(x, y, mask=mask)
    if mask is None:
        return out
    return jnp.where(jnp.any(mask[0, 0]), out, 0.0)


class ISAB(nn.Module):
    """Induced set attention block with ``num_inducing`` inducing points: f32[S, D] -> f32[S, D]."""

    dim: int
    num_inducing: int = 8
    heads: int = 4

    @nn.compact
    def __call__(self, x, mask):
        inducing = self.param("inducing", nn.initializers.xavier_uniform(), (self.num_inducing, self.dim))
        h = MAB(self.dim, self.heads, name="mab_induce")(inducing, x, mask)  # the set summarized in m points
        return MAB(self.dim, self.heads, name="mab_back")(x, h)  # every element attends to the summary


class PMA(nn.Module):
    """Pooling by multihead attention with ``num_seeds`` seed vectors: f32[S, D] -> f32[num_seeds, D]."""

    dim: int
    num_seeds: int = 1
    heads: int = 4

    @nn.compact
    def __call__(self, z, mask):
        seeds = self.param("seeds", nn.initializers.xavier_uniform(), (self.num_seeds, self.dim))
        return MAB(self.dim, self.heads, name="mab_pool")(seeds, nn.Dense(self.dim)(z), mask)


class _SetTransformer(nn.Module):
    """The sizes both encoders share: width, inducing points, heads, ISAB blocks, output size."""

    dim: int = 32
    num_inducing: int = 8
    heads: int = 4
    num_blocks: int = 2
    out_dim: int = 16


class SetEncoder(_SetTransformer):
    """phi: (features f32[S, F], scores f32[S], mask bool[S]) -> f32[out_dim].

    Scores are standardized over the set's real elements before encoding (the GP sees standardized
    targets too), so phi describes the shape of a task's response, not its units.
    """

    @nn.compact
    def __call__(self, features, scores, mask):
        n = jnp.maximum(jnp.sum(mask), 1)
        mean = jnp.sum(jnp.where(mask, scores, 0.0)) / n
        std = jnp.sqrt(jnp.sum(jnp.where(mask, jnp.square(scores - mean), 0.0)) / n)
        z_scores = jnp.where(mask, (scores - mean) / jnp.where(std > 1e-8, std, 1.0), 0.0)
        x = jnp.concatenate([features, z_scores[:, None]], axis=-1)
        x = jnp.where(mask[:, None], nn.Dense(self.dim)(x), 0.0)
        for i in range(self.num_blocks):
            x = ISAB(self.dim, self.num_inducing, self.heads, name=f"isab_{i}")(x, mask)
        pooled = PMA(self.dim, 1, self.heads, name="pma")(x, mask)[0]
        return nn.Dense(self.out_dim)(pooled)


class DataSetEncoder(_SetTransformer):
    """phi over raw data: (x f32[R, C], y f32[R], mask bool[R, C]) -> f32[out_dim].

    ``mask`` marks the real cells (real row and real column); padded columns are all-False and drop out of
    the pooling over columns. ``x`` and ``y`` come standardized (``spaces.benchmarks.uci``).
    """

    @nn.compact
    def __call__(self, x, y, mask):
        # one set per column, elements (x_rc, y_r); the same encoder for every column (shared parameters)
        columns = nn.vmap(
            SetEncoder, in_axes=(1, None, 1), variable_axes={"params": None}, split_rngs={"params": False}
        )(self.dim, self.num_inducing, self.heads, self.num_blocks, self.dim, name="columns")
        per_column = columns(x[:, :, None], y, mask)  # f32[C, dim]
        pooled = PMA(self.dim, 1, self.heads, name="pool_columns")(per_column, jnp.any(mask, axis=0))[0]
        return nn.Dense(self.out_dim)(pooled)
