"""What the parent hands guardscan's worker: one immutable, typed job (never a dict)."""

from __future__ import annotations

import msgspec

from pt2kit.runtime.job import ModelJob


class Job(ModelJob, frozen=True, kw_only=True):
    vary: list[str] = msgspec.field(default_factory=list)
    default_vary: bool = True
    dynamic: bool | None = None
    recompile_limit: int | None = None
    backend: str = "eager"
