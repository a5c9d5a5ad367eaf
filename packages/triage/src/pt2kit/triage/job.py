"""triage's options, typed: the one Struct the flags build and :func:`.drive.run` runs (triage loads no
model itself, so it is a plain frozen Struct). A bad value is one line and exit 2 before anything runs."""

from __future__ import annotations

from pathlib import Path

import msgspec

from pt2kit.runtime.errors import UsageError
from pt2kit.runtime.flags import check_seconds


class Job(msgspec.Struct, frozen=True, kw_only=True):
    command: list[str]  # the user's command, as given after `--`
    out: str | None = None  # the folder everything lands in; None: a fresh ./triage-N
    store: str | None = None  # --store (every step's); None: OUT/store
    timeout: float | None = None  # each step's --timeout (capture stops the script's tree after it)

    def __post_init__(self) -> None:
        if not self.command:
            raise UsageError("no command to run: give it after --, e.g. pt2kit triage -- python train.py")
        check_seconds("--timeout", self.timeout)


def fresh_folder(out: str | None, cwd: Path) -> Path:
    """The folder a run writes: ``out`` when it is new or empty (never one holding files: a run never writes
    over another's page, repros or streams), else the first free ``triage-N`` under ``cwd``."""
    if out is None:
        n = 1
        while (cwd / f"triage-{n}").exists():
            n += 1
        return cwd / f"triage-{n}"
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise UsageError(f"--out {out}: is a file, not a folder (give a new folder)")
    if path.is_dir() and any(path.iterdir()):
        raise UsageError(f"--out {out}: the folder holds files already; triage writes only into a new or "
                         "empty folder (give another --out, or leave it out for a fresh triage-N)")
    if not path.parent.is_dir():
        raise UsageError(f"--out {out}: {path.parent} is no folder")
    return path
