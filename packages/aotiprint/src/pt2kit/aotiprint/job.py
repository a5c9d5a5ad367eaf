"""What the parent hands aotiprint's worker: one immutable, typed job (never a dict)."""

from __future__ import annotations

import msgspec


class Job(msgspec.Struct, frozen=True, kw_only=True):
    model: str  # FILE.py[:NAME], or the package's path
    label: str
    device: str
    mode: str  # names | stats | save
    log: str  # where the printer's C stdout goes
    workdir: str  # the stock printer saves under ./tmp/ of it
    package: str | None = None  # run this PACKAGE.pt2 instead of compiling the model
    inputs: str | None = None  # FILE.py[:NAME] with a package's inputs
    kernels: list[str] | None = None
    jit: bool = False
    ima: bool = False
    emit_model: bool = True
    config: dict[str, str] = {}
