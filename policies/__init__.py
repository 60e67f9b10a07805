"""Policy networks as pure functions (MAADE, MADE, factorized, LSTM); importing registers them."""

from policies import factorized, lstm, maade, made  # noqa: F401  (each registers its policy)
from policies.base import Policy
from policies.registry import POLICIES, available_policies, make_policy, register_policy

__all__ = ["POLICIES", "Policy", "available_policies", "make_policy", "register_policy"]
