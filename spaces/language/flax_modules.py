"""Basic modules wrapping ``flax.linen`` layers (Negrinho et al. 2019, Figure 12 and Appendix E.1).

A basic module is ``compile_fn(di, dh) -> forward_fn(di) -> do``: ``dh`` holds the values of its
hyperparameters by local name, ``di``/``do`` the input/output arrays by local name. The
``compile_fn`` runs inside the ``nn.compact`` call of ``CompiledNetwork`` and creates its flax
layers named with ``layer_name()`` (so each step of a plan owns its parameters). Hyperparameters
may be ``D([...])``, dependent or shared hyperparameters, or plain values.

Layers: ``dense``, ``conv2d``, ``conv_bn_relu`` (NAS-Bench-101's op), ``relu_conv_bn``
(NAS-Bench-201's op), ``sep_conv`` (depthwise + pointwise), ``batch_norm``, ``relu``, ``tanh``,
``sigmoid``, ``activation`` (choice by name, traced), ``dropout`` (rate traced), ``max_pool``,
``avg_pool``, ``global_avg_pool``, ``flatten``, ``zero`` and the multi-input ``add``/``concat``.
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

from spaces.language.compile import is_training, layer_name
from spaces.language.library import basic_module

ACTIVATIONS = {
    "relu": nn.relu,
    "tanh": jnp.tanh,
    "sigmoid": nn.sigmoid,
    "elu": nn.elu,
    "gelu": nn.gelu,
    "identity": lambda x: x,
}


def siso_layer(name: str, fn, name_to_hyperp=None, traced=()):
    """A single-input single-output basic module: ``fn(x, dh) -> y`` called in the compact scope."""

    def compile_fn(di, dh):
        del di
        return lambda di: {"out": fn(di["in"], dh)}

    return basic_module(name, compile_fn, dict(name_to_hyperp or {}), traced=traced)


def dense(h_units):
    return siso_layer("Dense", lambda x, dh: nn.Dense(int(dh["units"]), name=layer_name())(x), {"units": h_units})


def conv2d(h_filters, h_kernel=3, h_stride=1):
    """SAME-padded 2-D convolution (Figure 12, right)."""

    def fn(x, dh):
        k, s = int(dh["kernel"]), int(dh["stride"])
        return nn.Conv(int(dh["filters"]), (k, k), (s, s), padding="SAME", name=layer_name())(x)

    return siso_layer("Conv2D", fn, {"filters": h_filters, "kernel": h_kernel, "stride": h_stride})


def _bn(x, suffix=""):
    return nn.BatchNorm(use_running_average=not is_training(), momentum=0.9, epsilon=1e-5, name=layer_name(suffix))(x)


def conv_bn_relu(h_filters, h_kernel=3):
    """Conv -> BatchNorm -> ReLU (the NAS-Bench-101 ops ``conv3x3-bn-relu``, ``conv1x1-bn-relu``)."""

    def fn(x, dh):
        k = int(dh["kernel"])
        y = nn.Conv(int(dh["filters"]), (k, k), padding="SAME", use_bias=False, name=layer_name("conv"))(x)
        return nn.relu(_bn(y, "bn"))

    return siso_layer("ConvBNReLU", fn, {"filters": h_filters, "kernel": h_kernel})


def relu_conv_bn(h_filters, h_kernel=3, h_stride=1):
    """ReLU -> Conv -> BatchNorm (the NAS-Bench-201 ops ``nor_conv_1x1``, ``nor_conv_3x3``)."""

    def fn(x, dh):
        k, s = int(dh["kernel"]), int(dh["stride"])
        y = nn.Conv(int(dh["filters"]), (k, k), (s, s), padding="SAME", use_bias=False, name=layer_name("conv"))(
            nn.relu(x)
        )
        return _bn(y, "bn")

    return siso_layer("ReLUConvBN", fn, {"filters": h_filters, "kernel": h_kernel, "stride": h_stride})


def sep_conv(h_filters, h_kernel=3, h_stride=1):
    """ReLU -> depthwise conv -> pointwise conv -> BatchNorm (a separable convolution)."""

    def fn(x, dh):
        k, s, c = int(dh["kernel"]), int(dh["stride"]), x.shape[-1]
        y = nn.Conv(c, (k, k), (s, s), padding="SAME", feature_group_count=c, use_bias=False, name=layer_name("dw"))(
            nn.relu(x)
        )
        y = nn.Conv(int(dh["filters"]), (1, 1), use_bias=False, name=layer_name("pw"))(y)
        return _bn(y, "bn")

    return siso_layer("SepConv", fn, {"filters": h_filters, "kernel": h_kernel, "stride": h_stride})


def batch_norm():
    return siso_layer("BatchNorm", lambda x, dh: _bn(x))


def relu():
    return siso_layer("ReLU", lambda x, dh: nn.relu(x))


def tanh():
    return siso_layer("Tanh", lambda x, dh: jnp.tanh(x))


def sigmoid():
    return siso_layer("Sigmoid", lambda x, dh: nn.sigmoid(x))


def activation(h_name):
    """One of ``ACTIVATIONS`` by name; traced, so networks that differ only here share a program."""

    def compile_fn(di, dh):
        del di

        def forward(di):
            idx = jnp.asarray(dh["name"]).astype(jnp.int32)
            return {"out": jax.lax.switch(idx, [ACTIVATIONS[n] for n in names], di["in"])}

        return forward

    inputs, outputs = basic_module("Activation", compile_fn, {"name": h_name}, traced=("name",))
    h = inputs["in"].module.hyperps["name"]
    names = list(getattr(h, "values", [getattr(h, "_value", None)]))
    bad = [n for n in names if n not in ACTIVATIONS]
    if bad:
        raise ValueError(f"activation names {bad} are unknown; choose from {sorted(ACTIVATIONS)}")
    return inputs, outputs


class _TracedDropout(nn.Module):
    """Inverted dropout whose rate is an array (so it can differ across vmapped candidates)."""

    @nn.compact
    def __call__(self, x, rate, train: bool):
        if not train:
            return x
        keep = jax.random.bernoulli(self.make_rng("dropout"), 1.0 - rate, x.shape)
        return jnp.where(keep, x / jnp.maximum(1.0 - rate, 1e-6), 0.0)


def dropout(h_rate):
    """Dropout with a traced rate (identity outside training); training needs a ``dropout`` rng."""

    def fn(x, dh):
        return _TracedDropout(name=layer_name())(x, jnp.asarray(dh["rate"], jnp.float32), is_training())

    return siso_layer("Dropout", fn, {"rate": h_rate}, traced=("rate",))


def max_pool(h_kernel=3, h_stride=1):
    def fn(x, dh):
        k, s = int(dh["kernel"]), int(dh["stride"])
        return nn.max_pool(x, (k, k), (s, s), padding="SAME")

    return siso_layer("MaxPool", fn, {"kernel": h_kernel, "stride": h_stride})


def avg_pool(h_kernel=3, h_stride=1):
    def fn(x, dh):
        k, s = int(dh["kernel"]), int(dh["stride"])
        return nn.avg_pool(x, (k, k), (s, s), padding="SAME", count_include_pad=False)

    return siso_layer("AvgPool", fn, {"kernel": h_kernel, "stride": h_stride})


def global_avg_pool():
    return siso_layer("GlobalAvgPool", lambda x, dh: jnp.mean(x, axis=tuple(range(1, x.ndim - 1))))


def flatten():
    return siso_layer("Flatten", lambda x, dh: x.reshape(x.shape[0], -1))


def zero():
    """NAS-Bench-201's ``none``: zeros of the input's shape."""
    return siso_layer("Zero", lambda x, dh: jnp.zeros_like(x))


def add(num_inputs: int):
    """Sums inputs ``in0 .. in{k-1}``."""

    def compile_fn(di, dh):
        del di, dh
        return lambda di: {"out": sum(di[f"in{i}"] for i in range(num_inputs))}

    return basic_module("Add", compile_fn, {"k": num_inputs}, [f"in{i}" for i in range(num_inputs)])


def concat(num_inputs: int):
    """Concatenates inputs ``in0 .. in{k-1}`` along the last (channel) axis."""

    def compile_fn(di, dh):
        del di, dh
        return lambda di: {"out": jnp.concatenate([di[f"in{i}"] for i in range(num_inputs)], axis=-1)}

    return basic_module("Concat", compile_fn, {"k": num_inputs}, [f"in{i}" for i in range(num_inputs)])
