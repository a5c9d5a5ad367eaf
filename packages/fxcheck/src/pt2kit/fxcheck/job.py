"""What the parent hands fxcheck's worker: one immutable, typed job (never a dict)."""

from __future__ import annotations

import msgspec

from pt2kit.schema import Profile


class Job(msgspec.Struct, frozen=True, kw_only=True):
    model: str  # FILE.py[:NAME]
    device: str
    profile: Profile
    config: dict[str, str] = {}
    backward: bool = False
    inductor: bool = False
