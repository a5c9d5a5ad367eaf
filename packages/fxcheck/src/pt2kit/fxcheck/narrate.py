"""What fxcheck says on stderr, read back from the records its worker writes."""

from __future__ import annotations

import os
from typing import Any

import msgspec


def where(source: str) -> str:
    """``file:line`` relative to the working directory when it is below it (shorter to read)."""
    path, _, line = source.rpartition(":")
    try:
        rel = os.path.relpath(path)
    except ValueError:
        rel = path
    return f"{rel if not rel.startswith('..') else path}:{line}"


class Narrator:
    def __init__(self, say: Any) -> None:
        self.say = say
        self.findings: list[dict[str, Any]] = []
        self.errors: list[dict[str, Any]] = []

    def record(self, raw: bytes) -> None:
        if raw.startswith(b'{"kind":"violation"'):
            v = msgspec.json.decode(raw)
            self.findings.append(v)
            module = f" [{v['module']}]" if v.get("module") else ""
            at = f"{where(v['source'])}: " if v.get("source") else ""
            count = f" (x{v['count']})" if v.get("count", 1) > 1 else ""
            inside = f", in {v['subgraph']}" if v.get("subgraph") else ""
            self.say(f"{at}{v['constraint']}: {v['message']}{module} ({v['phase']}{inside}){count}")
        elif raw.startswith(b'{"kind":"error"'):
            e = msgspec.json.decode(raw)
            self.errors.append(e)
            self.say(f"error: {e['message']}")

    def summary(self, graphs: int, *, exit_zero: bool) -> None:
        n = len(self.findings)
        failed = f"; {len(self.errors)} of them not captured (error records): what is counted is part of the model" \
            if self.errors else ""
        if n:
            by: dict[str, int] = {}
            for v in self.findings:
                by[v["constraint"]] = by.get(v["constraint"], 0) + 1
            detail = ", ".join(f"{k} {c}" for k, c in sorted(by.items()))
            self.say(f"{n} finding{'s' * (n != 1)} in {graphs} graph(s) ({detail}){failed}"
                     + ("; exit 0 with --exit-zero" if exit_zero else ""))
        else:
            self.say(f"clean: {graphs} graph(s), no findings{failed}")
