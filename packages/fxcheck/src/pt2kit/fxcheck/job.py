"""fxcheck's options, typed: the one Struct the flags build, the parent runs and the worker decodes.

The profile flags (--dtypes, --align, --deny ...) are :class:`ProfileFlags`; the parent resolves them
over --profile and the environment into the Job's one :class:`~pt2kit.schema.Profile`, so a bad
profile is exit 2 before anything runs and the worker checks exactly what the parent resolved.
"""

from __future__ import annotations

import msgspec

from pt2kit.runtime.common.flags import check_range
from pt2kit.runtime.common.job import ModelJob
from pt2kit.schema import Profile


class ProfileFlags(msgspec.Struct, frozen=True, kw_only=True):
    """The flags that win over the profile and its environment variables; None: not given."""

    dtypes: list[str] | None = None
    align: int | None = None
    align_min_size: int | None = None
    align_scope: str | None = None  # tiled | all
    max_tensor_bytes: int | None = None
    contiguous: bool | None = None
    deny: list[str] | None = None
    strict: bool | None = None  # kept for old scripts: fxcheck exits 1 on findings anyway
    backward: bool | None = None

    def __post_init__(self) -> None:
        check_range("--align-min-size", self.align_min_size, 0)


class Job(ModelJob, frozen=True, kw_only=True):
    profile: Profile = msgspec.field(default_factory=Profile)  # --profile with the flags over it, resolved
    inductor: bool = False  # also record the code Inductor generates, kernel by kernel
    exit_zero: bool = False  # exit 0 even with findings (the parent's verdict only)

    @property
    def backward(self) -> bool:
        """Capture and check the backward graphs too (the profile's, or --backward)."""
        return bool(self.profile.backward)
