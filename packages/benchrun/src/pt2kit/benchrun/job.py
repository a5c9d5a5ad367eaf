"""What the parent hands benchrun's worker: one immutable, typed job (never a dict)."""

from __future__ import annotations

from pt2kit.runtime.job import ModelJob


class Job(ModelJob, frozen=True, kw_only=True):
    backend: str = "inductor"  # eager | aot_eager | inductor | inductor:MODE | FILE.py:NAME | module:attr
    phase: str = "cold"  # cold: everything, with an empty cache; warm: the compile alone, caches kept
    mode: str = "infer"  # infer | train
    dtype: str | None = None
    timer: str = "wall"  # events | cudagraph | wall
    repeat: int | None = None  # samples per side; None: as many as fit in `budget_s`
    warmup: int = 5
    budget_s: float = 1.0
    accuracy: bool = True
    profile_kernels: bool = False
    seed: int = 0
    precision: str = "harness"  # the accuracy status's settings: harness | as-configured (timings: the model's own)
