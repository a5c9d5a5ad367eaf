"""What the parent hands minify's capture worker: one immutable, typed job (never a dict)."""

from __future__ import annotations

from pt2kit.runtime.job import ModelJob
from pt2kit.schema import Profile


class Job(ModelJob, frozen=True, kw_only=True):
    failure: str = "auto"  # auto | compile-error | crash | accuracy | nan | violation
    backend: str = "inductor"  # inductor | aot_eager | aoti | FILE.py:NAME
    seed: int = 0
    ref: str = "eager"  # eager | eager64: what an accuracy failure's output is held against
    precision: str = "harness"  # harness | as-configured: the settings an accuracy failure is judged under
    rule: str = "fp64"  # fp64 | close: kdiff's verdict rule of the diff it was handed (--verdict close)
    profile: Profile | None = None  # fxcheck's constraints: the first violation they find is the failure
