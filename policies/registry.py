"""The policy registry: a name for each ``Policy`` class, and policies built by name.

The implementations register themselves into ``POLICIES`` (``@register_policy("name")`` on the class);
this module imports none of them, so a policy module imports it without a cycle. Importing any module
of the package runs ``policies/__init__.py`` first, which imports the built-in policies, so the registry
read here is the full one; library code imports it from the package::

    from policies import available_policies, make_policy
"""

from __future__ import annotations

from spaces.base import Space
from spaces.names import lookup

__all__ = ["POLICIES", "available_policies", "make_policy", "register_policy"]

POLICIES: dict[str, type] = {}  # name -> a ``policies.base.Policy`` subclass


def register_policy(name: str):
    """Class decorator: registers a ``Policy`` subclass under ``name``."""

    def deco(cls):
        if name in POLICIES:
            raise ValueError(f"policy {name!r} registered twice")
        POLICIES[name] = cls
        cls.registry_name = name
        return cls

    return deco


def available_policies() -> list[str]:
    """The names of the registered policies."""
    return sorted(POLICIES)


def make_policy(name: str, space: Space, **kwargs):
    """Builds registered policy ``name`` on ``space``; unknown names fail with the list of valid ones."""
    return lookup("policy", name, POLICIES)(space, **kwargs)
