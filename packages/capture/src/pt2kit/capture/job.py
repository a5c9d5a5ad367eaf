"""capture's options, typed: the one Struct the flags build and the parent runs (capture loads no model,
so it is a plain frozen Struct, not a ModelJob). Ranges and forms are checked in ``__post_init__``:
a bad value is one line and exit 2 before the command starts."""

from __future__ import annotations

import re

import msgspec

from pt2kit.runtime.common.errors import UsageError
from pt2kit.runtime.common.flags import check_range, check_seconds

from .boot.pt2kit_capture_contract import CHECKS, DEFAULT_MAX_RUN_BYTES, DEFAULT_MAX_VALUE_BYTES, PICKS, VALUES

# Dynamo's compile id as str(CompileId) writes it: frame/compile, "!ca/frame/compile" under compiled autograd;
# the boot's "aoti/N" for the Nth program an AOT Inductor script exported
_COMPILE_ID = re.compile(r"(!?\d+|aoti)(/\d+)+")


def parse_graphs(text: str) -> tuple[str, ...]:
    """--graphs: ("all",), ("first",), ("failing",) or the compile ids of a comma list (``0/1,3/0,aoti/0``)."""
    text = text.strip()
    if text in PICKS:
        return (text,)
    ids = tuple(p.strip() for p in text.split(","))
    bad = [p for p in ids if not _COMPILE_ID.fullmatch(p)]
    if bad or not ids:
        raise UsageError(f"--graphs {text}: expected all, first, failing or compile ids such as 0/1,3/0 "
                         f"(not {bad[0] if bad else text!r})")
    return ids


def parse_rank(text: str) -> int | None:
    """--rank: a rank (>= 0), or ``all`` (None: every rank's graphs are kept)."""
    if text.strip() == "all":
        return None
    try:
        rank = int(text)
    except ValueError:
        raise UsageError(f"--rank {text}: expected a rank (0, 1, ...) or all") from None
    return check_range("--rank", rank, 0)


class Job(msgspec.Struct, frozen=True, kw_only=True):
    command: list[str]  # the user's command, as given after `--`
    graphs: tuple[str, ...] = ("all",)  # parse_graphs
    rank: int | None = 0  # None: every rank
    values: str = "small"  # small | all | none
    max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES
    max_run_bytes: int | None = None  # None: DEFAULT_MAX_RUN_BYTES under --values small, no cap under all
    timeout: float | None = None  # seconds, then the command's whole process tree is killed
    out: str | None = None  # records to this file; the command's stdout stays on stdout
    check: str | None = None  # nan | accuracy: every compiled call judged, the first failing one's inputs kept

    def __post_init__(self) -> None:
        if not self.command:
            raise UsageError("no command to run: give it after --, e.g. pt2kit capture -- python train.py")
        check_seconds("--timeout", self.timeout)
        check_range("--max-value-bytes", self.max_value_bytes, 0)
        if self.max_run_bytes is not None:
            check_range("--max-run-bytes", self.max_run_bytes, 0)
        if self.values not in VALUES:
            raise UsageError(f"--values {self.values}: expected one of {', '.join(VALUES)}")
        if self.check is not None and self.check not in CHECKS:
            raise UsageError(f"--check {self.check}: expected one of {', '.join(CHECKS)}")

    @property
    def run_budget(self) -> int | None:
        """The run's cap on tensor-file bytes: the one given, else 1 GiB under small; None: no cap."""
        if self.max_run_bytes is not None:
            return self.max_run_bytes
        return DEFAULT_MAX_RUN_BYTES if self.values == "small" else None

    def keeps_rank(self, rank: int | None) -> bool:
        """Whether a process of this rank (None: not a distributed run, taken as rank 0) is kept."""
        return self.rank is None or (rank or 0) == self.rank
