"""torch's structured trace (``TORCH_TRACE``), as a list of events: one reader for files and live runs.

Guarantees:

* An :class:`Event` is what one ``trace_structured`` call wrote: its kind (``dynamo_start``,
  ``artifact``, ``compilation_metrics``, ...), its metadata dict and its payload text. The same
  events come from a ``TORCH_TRACE`` directory (:func:`read_trace`) and from the live
  ``torch.__trace`` logger (``torchapi.capture_trace``), so guardscan reads both the same way and a
  trace directory gives the same findings as the live run.
* Reading a trace imports no torch. A line that is not a trace line is skipped, never an error:
  torch adds kinds between releases, and a truncated file (a crashed run) is still worth reading.
* ``str`` events (torch's interned file names) are resolved into :attr:`Trace.strings`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# glog prefix: level, date, time, pid, file:line] then the JSON metadata
_LINE = re.compile(r"^[VIWEF]\d{4} [\d:.]+ +\d+ [^\]]*\] (\{.*\})\s*$")
_ID_KEYS = frozenset({"frame_id", "frame_compile_id", "attempt", "has_payload", "rank", "stack",
                      "compiled_autograd_id", "subgraph_name"})

TRACE_HINT = "a TORCH_TRACE directory holds dedicated_log_torch_trace_*.log files (run with TORCH_TRACE=DIR)"


@dataclass
class Event:
    kind: str
    meta: dict[str, Any]
    payload: str | None = None
    variant: str | None = None  # live runs: which call (example inputs or a --vary variant) was running

    @property
    def body(self) -> Any:
        return self.meta.get(self.kind)

    @property
    def compile_id(self) -> str | None:
        """``frame/compile`` as torch prints it (``0/1``), or None outside a compile."""
        if "frame_id" in self.meta and "frame_compile_id" in self.meta:
            return f"{self.meta['frame_id']}/{self.meta['frame_compile_id']}"
        body = self.body
        if isinstance(body, dict) and isinstance(body.get("compile_id"), str):
            return body["compile_id"]
        return None

    @property
    def artifact(self) -> str | None:
        body = self.body
        return body.get("name") if self.kind == "artifact" and isinstance(body, dict) else None


@dataclass
class Trace:
    events: list[Event] = field(default_factory=list)
    strings: dict[int, str] = field(default_factory=dict)

    def add(self, meta: dict[str, Any], payload: str | None, variant: str | None = None) -> None:
        kinds = [k for k in meta if k not in _ID_KEYS]
        if not kinds:
            return
        kind = kinds[0]
        if kind == "str":
            s = meta["str"]
            if isinstance(s, list) and len(s) == 2:
                self.strings[int(s[1])] = str(s[0])
            return
        self.events.append(Event(kind, meta, payload, variant))

    def files(self) -> list[str]:
        return list(self.strings.values())


def event_kind(meta: dict[str, Any]) -> str | None:
    kinds = [k for k in meta if k not in _ID_KEYS]
    return kinds[0] if kinds else None


def parse_lines(lines: list[str], trace: Trace) -> None:
    meta: dict[str, Any] | None = None
    payload: list[str] = []

    def flush() -> None:
        if meta is not None:
            trace.add(meta, "\n".join(payload) if payload else None)

    for line in lines:
        if line.startswith("\t"):
            if meta is not None:
                payload.append(line[1:])
            continue
        m = _LINE.match(line)
        if not m:
            continue
        flush()
        try:
            decoded = json.loads(m.group(1))
        except ValueError:
            meta = None
            continue
        meta = decoded if isinstance(decoded, dict) else None
        payload = []
    flush()


def trace_files(path: Path) -> list[Path]:
    """The log files of a TORCH_TRACE directory (or one file), oldest name first."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise FileNotFoundError(f"{path}: no such trace directory; {TRACE_HINT}")
    files = sorted(path.glob("dedicated_log_torch_trace*.log")) or sorted(path.glob("*.log"))
    if not files:
        raise FileNotFoundError(f"{path}: no trace logs in it; {TRACE_HINT}")
    return files


def read_trace(path: Path) -> list[tuple[Path, Trace]]:
    """One :class:`Trace` per log file (each file is one process: compile ids restart in each)."""
    out = []
    for f in trace_files(path):
        with open(f, encoding="utf-8", errors="replace") as fh:
            out.append((f, parse_text(fh.read())))
    return out


def parse_text(text: str) -> Trace:
    """The :class:`Trace` of one log's text (a file's, or a blob's: ``pt2kit capture`` keeps each
    process's log in the store)."""
    t = Trace()
    parse_lines(text.split("\n"), t)
    return t
