"""The one registry of roles: a role is its folder in collectors/ (its SPEC, its C part, its Python part) and its
name here. What the build and the C side know of a role comes from its SPEC (echo/build.py)."""

from __future__ import annotations

from typing import Any

from collectors import papi, perturb, valgrind

# in the order their C parts subscribe their hooks: the first to start around a call ends last
ROLES = (perturb, valgrind, papi)


def specs() -> list[dict[str, Any]]:
    """Every role's SPEC, in registry order."""
    return [role.SPEC for role in ROLES]
