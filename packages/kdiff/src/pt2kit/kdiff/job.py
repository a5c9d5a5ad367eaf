"""What the parent hands kdiff's worker: one immutable, typed job (never a dict)."""

from __future__ import annotations

import msgspec


class Job(msgspec.Struct, frozen=True, kw_only=True):
    model: str  # FILE.py[:NAME]
    device: str
    config: dict[str, str] = {}
    emit_model: bool = True  # False when the model record came down the pipe (it is forwarded already)
    from_stream: bool = False  # the model was named by a stream: the trust rules of pt2kit.runtime.trust
    ref: str = "eager"
    test: str = "inductor"
    verdict: str = "fp64"  # fp64 | close
    atol: float | None = None
    rtol: float | None = None
    equal_nan: bool = False
    grad: bool = False
    localize: bool = True
    seed: int = 0
