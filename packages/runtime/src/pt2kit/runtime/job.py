"""The fields every worker job that loads a model shares; each tool's ``job.py`` adds its own."""

from __future__ import annotations

import msgspec


class ModelJob(msgspec.Struct, frozen=True, kw_only=True):
    model: str  # FILE.py[:NAME]
    device: str
    config: dict[str, str] = {}
    emit_model: bool = True  # False when the model record came down the pipe (it is forwarded already)
    from_stream: bool = False  # the model was named by a stream: the trust rules of pt2kit.runtime.trust
