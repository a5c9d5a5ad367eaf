"""What saved streams hold, run by run (``pt2kit ls``). Reads streams as data: nothing named in
them is opened. (``pt2kit gc`` is :mod:`.storegc`.)

Guarantees:

* One line per run (a run is one tool invocation, by its ``run`` id, wherever its lines sit in the
  inputs): tool and version, model(s), a verdict and the counts by kind. The verdict is the worst
  thing the run recorded: ``error`` (exit N), ``crash``, ``fail`` (a failing diff or a NaN/Inf
  kernel), ``findings`` (violations, graph breaks, unexpected recompiles, a repro made), else
  ``clean``.
* A record is counted once however many of the inputs hold it: every tool forwards the lines it
  reads, so ``kdiff``'s stream and ``minify``'s (kdiff's lines, then minify's) hold kdiff's diff
  twice. A line is known by its run and its bytes (a digest of them); within one input every line
  counts, so a run that wrote the same record twice still shows two.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pt2kit.schema import read_stream


@dataclass
class RunSummary:
    run: str
    tool: str = "?"
    version: str = ""
    models: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    verdict: str = "clean"
    exit_code: int | None = None

    def line(self) -> str:
        models = ",".join(self.models) or "-"
        counts = " ".join(f"{k}={n}" for k, n in sorted(self.counts.items()) if k != "header")
        tool = f"{self.tool} {self.version}".strip()
        return f"{self.run}  {tool:<18} {models:<28} {self.verdict:<9} {counts}"


_RANK = {"clean": 0, "findings": 1, "fail": 2, "crash": 3, "error": 4}


def _worse(a: str, b: str) -> str:
    return a if _RANK[a.split("(")[0]] >= _RANK[b.split("(")[0]] else b


def summarize(sources: Iterable[str]) -> list[RunSummary]:
    runs: dict[str, RunSummary] = {}
    seen: dict[bytes, int] = {}  # line digest -> the most copies any one input held so far
    here: dict[bytes, int] = {}  # line digest -> copies in the input being read
    source = None
    for line in read_stream(list(sources)):
        if line.source != source:
            for key, n in here.items():
                seen[key] = max(seen.get(key, 0), n)
            here, source = {}, line.source
        key = hashlib.blake2b(line.raw, digest_size=16).digest()  # the run is in the bytes
        here[key] = here.get(key, 0) + 1
        if here[key] <= seen.get(key, 0):
            continue  # forwarded: an earlier input holds this copy
        r = runs.setdefault(line.run, RunSummary(line.run))
        r.counts[line.kind] = r.counts.get(line.kind, 0) + 1
        rec = line.record
        if rec is None:
            continue
        kind = line.kind
        if kind == "header":
            r.tool, r.version = rec.tool, rec.tool_version
        model = getattr(rec, "model", None)
        if kind in ("model", "diff", "crash", "violation", "graph", "repro", "bisect") and isinstance(model, str) and model \
                and model not in r.models and len(r.models) < 3:
            r.models.append(model)
        verdict = None
        if kind == "error":
            verdict, r.exit_code = f"error({rec.exit_code})", rec.exit_code
        elif kind == "crash":
            verdict = "crash"
        elif (kind == "diff" and not rec.passed) or (kind == "kernel" and _nonfinite(rec)):
            verdict = "fail"
        elif kind in ("violation", "graph_break", "repro") or (kind == "recompile" and not rec.expected):
            verdict = "findings"
        if verdict:
            r.verdict = _worse(verdict, r.verdict)
    return list(runs.values())


def _nonfinite(k: Any) -> bool:
    return any(a.stats is not None and (a.stats.nan or a.stats.inf) and not a.uninitialised for a in k.args)
