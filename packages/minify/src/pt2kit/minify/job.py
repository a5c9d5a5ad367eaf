"""minify's options, typed: the one Struct the flags build, the parent runs and the original run's worker decodes
(never a dict). Ranges and clashes between flags are checked in ``__post_init__``: exit 2 before any work."""

from __future__ import annotations

from pathlib import Path

from pt2kit.runtime.common.errors import UsageError
from pt2kit.runtime.common.flags import check_range, check_seed
from pt2kit.runtime.common.job import ModelJob
from pt2kit.schema import Profile

KEEPS_A_VIOLATION = ("auto", "violation")


class Job(ModelJob, frozen=True, kw_only=True):
    failure: str = "auto"  # auto | compile-error | crash | accuracy | nan | violation | missing-error
    # a name torch registers (the worker checks it), aoti, or FILE.py:NAME; None: a piped record's script's
    # (pt2kit.runtime.common.backends), else inductor (drive.run sets it before any worker runs)
    backend: str | None = None
    seed: int = 0
    ref: str = "eager"  # eager | eager64: what an accuracy failure's output is held against
    precision: str = "harness"  # harness | as-configured: the settings an accuracy failure is judged under
    rule: str = "fp64"  # fp64 | close: kdiff's verdict rule of the diff it was handed (--verdict close)
    deny: str | None = None  # --deny OP: keep the violation of this op staying in the graph
    profile: Profile | None = None  # fxcheck's constraints (--profile, --align, --dtypes): the first violation
    profile_name: str | None = None  # --profile as given: a shipped NAME, or FILE.toml (an input -o may not be)
    check_str: str | None = None  # an error counts only if its message holds this
    jobs: int | None = None  # workers judging candidates; None: auto (drive.workers decides, capped)
    output: str | None = None  # -o: the repro is also written here
    # infer | train (a training step: forward, loss, backward; failures in the backward graph too); None: a
    # piped model record's `train` (or a failing gradient's diff: train), else infer
    mode: str | None = None
    bisect: bool = True  # after the repro: which compiler stage breaks it (--no-bisect: not asked)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_seed("--seed", self.seed)
        check_range("--jobs", self.jobs, 1, what="a number of workers (or auto)")
        if self.deny and self.failure not in KEEPS_A_VIOLATION:
            raise UsageError(f"--deny with --failure {self.failure}: --deny keeps a violation")
        if self.profile is not None:
            if self.failure not in KEEPS_A_VIOLATION:
                raise UsageError(f"--profile, --align or --dtypes with --failure {self.failure}: they keep a violation")
            if self.model is None:
                raise UsageError("--profile, --align and --dtypes check a MODEL; for a stream, pipe fxcheck's "
                                 "violations (`fxcheck m.py --align 16 | minify`)")
        if self.mode == "train" and self.backend == "aoti":
            raise UsageError("--mode train with --backend aoti: an AOT Inductor package runs inference only")
        be = self.backend or "inductor"
        if (":" in be and not be.rpartition(":")[0].endswith(".py")) or not be.rpartition(":")[2]:
            raise UsageError(f"--backend {be}: expected a name torch registers (inductor, aot_eager...), aoti or "
                             "FILE.py:NAME")
        if ":" in be and not Path(be.rpartition(":")[0]).is_file():
            raise UsageError(f"--backend {be}: no such file {be.rpartition(':')[0]}")


def parse_jobs(text: str) -> int | None:
    """--jobs: ``auto`` (None) or a number (its range is the Job's to check)."""
    if text == "auto":
        return None
    try:
        return int(text)
    except ValueError:
        raise UsageError(f"--jobs {text}: expected a number of workers >= 1, or auto") from None


def violation_profile(*, profile: str | None, align: int | None, dtypes: str | None,
                      deny: str | None) -> Profile | None:
    """fxcheck's profile from minify's --profile, --align, --dtypes (and --deny with them); None when none
    is given. Its environment's PT2KIT_PROFILE is not read: minify keeps a violation only when asked on
    its command line."""
    check_range("--align", align, 1)
    if profile is None and align is None and dtypes is None:
        return None
    from pt2kit.fxcheck import ProfileFlags, parse_dtypes, resolve_profile

    flags = ProfileFlags(align=align, deny=[deny] if deny else None,
                         dtypes=parse_dtypes(dtypes, "--dtypes") if dtypes else None)
    return resolve_profile(profile, flags, environ={})
