"""What a finished tool run left: its exit code, its stdout bytes and stderr text, its records."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar

import msgspec

from pt2kit.schema import Record, decode

R = TypeVar("R", bound=Record)


@dataclass(frozen=True)
class Result:
    code: int
    stdout: bytes
    stderr: str
    argv: tuple[str, ...] = field(default=(), repr=False)

    @property
    def records(self) -> list[dict[str, Any]]:
        """Every stdout line as the JSON object it is (blank lines skipped): what a test indexes by key."""
        return [msgspec.json.decode(line) for line in self.stdout.splitlines() if line.strip()]

    def kind(self, kind: str) -> list[dict[str, Any]]:
        return [r for r in self.records if r["kind"] == kind]

    @property
    def structs(self) -> list[Record]:
        """Every stdout line through the schema's own decoder: a line that is not a valid record of a
        known kind fails here, with the schema's one-line message."""
        return [decode(line) for line in self.stdout.splitlines() if line.strip()]

    def of(self, cls: type[R]) -> list[R]:
        """The records of one Struct type (``result.of(Diff)``), in stream order."""
        return [r for r in self.structs if isinstance(r, cls)]
