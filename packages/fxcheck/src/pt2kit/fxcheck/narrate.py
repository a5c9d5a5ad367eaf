"""What fxcheck says on stderr, read from the typed records its worker writes."""

from __future__ import annotations

import os
from typing import Any

import msgspec

from pt2kit.runtime.common.errors import EXIT_FINDINGS, EXIT_OK
from pt2kit.runtime.parent.narrate import Narrator as Base
from pt2kit.runtime.parent.narrate import Say
from pt2kit.schema import Error, Violation

from .work import Summary


def where(source: str) -> str:
    """``file:line`` relative to the working directory when it is below it (shorter to read)."""
    path, _, line = source.rpartition(":")
    try:
        rel = os.path.relpath(path)
    except ValueError:
        rel = path
    return f"{rel if not rel.startswith('..') else path}:{line}"


def _labelled(say: Say, label: str) -> Say:
    return lambda msg: say(f"{label}: {msg}")


class Narrator(Base):
    def __init__(self, say: Say, label: str, job: Any = None) -> None:
        if job is not None and job.from_stream:  # several models on one stderr: each line says which
            say = _labelled(say, label)
        super().__init__(say, label, job)
        self.findings: list[Violation] = []
        self.errors: list[Error] = []

    def on_violation(self, v: Violation) -> None:
        self.findings.append(v)
        module = f" [{v.module}]" if v.module else ""
        at = f"{where(v.source)}: " if v.source else ""
        count = f" (x{v.count})" if v.count > 1 else ""
        inside = f", in {v.subgraph}" if v.subgraph else ""
        self.say(f"{at}{v.constraint}: {v.message}{module} ({v.phase}{inside}){count}")

    def on_error(self, e: Error) -> None:
        self.errors.append(e)
        self.say(f"error: {e.message}")

    def finish(self, value: Any, notes: dict[str, Any]) -> int:
        """The summary line; exit 1 on a finding or a graph not captured (no clean bill), unless --exit-zero."""
        summary, exit_zero = msgspec.convert(value, Summary), bool(self.job is not None and self.job.exit_zero)
        graphs = summary.graphs
        if not graphs and summary.nothing_compiled and not self.errors:  # nothing checked is not clean
            self.say(f"{summary.nothing_compiled}; 0 graphs checked" + ("; exit 0 with --exit-zero" if exit_zero else ""))
            return EXIT_OK if exit_zero else EXIT_FINDINGS
        n = len(self.findings)
        failed = f"; {len(self.errors)} of them not captured (error records): what is counted is part of the model" \
            if self.errors else ""
        if n:
            by: dict[str, int] = {}
            for v in self.findings:
                by[v.constraint] = by.get(v.constraint, 0) + 1
            detail = ", ".join(f"{k} {c}" for k, c in sorted(by.items()))
            self.say(f"{n} finding{'s' * (n != 1)} in {graphs} graph(s) ({detail}){failed}"
                     + ("; exit 0 with --exit-zero" if exit_zero else ""))
        else:
            self.say(f"clean: {graphs} graph(s), no findings{failed}")
        return EXIT_FINDINGS if (self.findings or self.errors) and not exit_zero else EXIT_OK
