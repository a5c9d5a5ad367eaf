"""What the parent hands kdiff's worker: one immutable, typed job (never a dict)."""

from __future__ import annotations

from pt2kit.runtime.job import ModelJob


class Job(ModelJob, frozen=True, kw_only=True):
    ref: str = "eager"
    test: str = "inductor"
    verdict: str = "fp64"  # fp64 | close
    atol: float | None = None
    rtol: float | None = None
    equal_nan: bool = True  # the benchmark harness's: NaN on both sides agrees
    grad: bool = False
    localize: bool = True
    seed: int = 0
    precision: str = "harness"  # harness | as-configured
