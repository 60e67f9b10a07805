"""The factorized ("plain vanilla") policy of the ablation, eq. 21.

``P(a_1:N) = prod_i P(a_i)``: one learnable logit vector per hyperparameter
and nothing else, which "amounts to updating only the bias terms in (10)".
The order is accepted (and ignored) so every policy has the same signature.
Logits start at zero: the initial policy is uniform over allowed values.
"""

from __future__ import annotations

import jax.numpy as jnp

from policies.base import Policy
from policies.registry import register_policy


@register_policy("factorized")
class Factorized(Policy):
    def __init__(self, space):
        super().__init__(space)

    def init(self, key):
        del key
        return {"heads": {"b": jnp.zeros((self.num_tokens, self.num_values))}}

    def logits(self, params, tokens, order):
        del tokens, order
        return params["heads"]["b"]
