"""What the parent hands guardscan's worker: one immutable, typed job (never a dict)."""

from __future__ import annotations

import msgspec


class Job(msgspec.Struct, frozen=True, kw_only=True):
    model: str  # FILE.py[:NAME]
    device: str
    config: dict[str, str] = {}
    emit_model: bool = True  # False when the model record came down the pipe (it is forwarded already)
    from_stream: bool = False  # the model was named by a stream: the trust rules of pt2kit.runtime.trust
    vary: list[str] = []
    default_vary: bool = True
    dynamic: bool | None = None
    recompile_limit: int | None = None
    backend: str = "eager"
