"""Policy networks as pure functions (MAADE, MADE, factorized, LSTM); importing registers them."""

from policies import factorized, lstm, maade, made  # noqa: F401
from policies.base import POLICIES, Policy, available_policies, make_policy  # noqa: F401
