"""Typing helpers for arguments the native module takes as plain Python values."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, TypedDict

__all__ = ["SoftwareRule"]


class SoftwareRule(TypedDict):
    """Which software a caller accepts: one ``exact`` identity, or 1 to 32
    ``approved`` ones. The core validates it when the request runs."""

    mode: Literal["exact", "approved"]
    identities: Sequence[str]
