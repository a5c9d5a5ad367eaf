"""reportgen's options, typed: the one Struct the flags build and :func:`.drive.run` reads.

reportgen loads no model, so its Job is a plain frozen Struct. What can be checked without reading
a file is checked here (exit 2 before anything is read); -o against the inputs is drive.py's.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from pt2kit.runtime.common.errors import UsageError


class Job(msgspec.Struct, frozen=True, kw_only=True):
    inputs: tuple[str, ...] = ()  # files, directories of streams, -; none: stdin
    output: Path | None = None  # -o; None: the report on stdout
    fmt: str | None = None  # html | json | md | text; None: from -o's suffix (a report: html, a comparison: text)
    title: str | None = None  # None: "pt2kit report" or "pt2kit comparison"
    compare: bool = False  # --compare BEFORE AFTER
    store: Path | None = None  # --store: where the page finds the blobs it embeds

    def __post_init__(self) -> None:
        if self.compare and len(self.inputs) != 2:
            raise UsageError(f"--compare takes two runs, BEFORE AFTER; got {len(self.inputs)} input(s)")
        if self.compare and self.inputs.count("-") > 1:
            raise UsageError("--compare: only one side can be stdin")
