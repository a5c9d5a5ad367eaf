"""What saved streams hold, run by run (``pt2kit ls``), and which store blobs they still need
(``pt2kit gc``). Reads streams as data: nothing named in them is opened but the store's blobs.

Guarantees:

* ``ls``: one line per run (a run is one tool invocation, by its ``run`` id, wherever its lines sit
  in the inputs): tool and version, model(s), a verdict and the counts by kind. The verdict is the
  worst thing the run recorded: ``error`` (exit N), ``crash``, ``fail`` (a failing diff or a
  NaN/Inf kernel), ``findings`` (violations, graph breaks, unexpected recompiles), else ``clean``.
* ``gc``: a blob is kept when any line of any given stream references it, whatever the kind (records
  of kinds this version does not know are searched too); only files of the store's own blob form
  under ``<store>/blobs`` are ever deleted, and a symlink is removed, never followed. With no
  stream given nothing is deleted (that would empty the store). Temporary files of writers that
  are no longer running go too.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from pt2kit.schema import read_stream, temp_owner

_BLOB = re.compile(r"[0-9a-f]{64}(?:\.[A-Za-z0-9_-]{1,16}){0,3}")


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
    for line in read_stream(list(sources)):
        r = runs.setdefault(line.run, RunSummary(line.run))
        r.counts[line.kind] = r.counts.get(line.kind, 0) + 1
        rec = line.record
        if rec is None:
            continue
        kind = line.kind
        if kind == "header":
            r.tool, r.version = rec.tool, rec.tool_version
        model = getattr(rec, "model", None)
        if kind in ("model", "diff", "crash", "violation", "graph") and isinstance(model, str) and model \
                and model not in r.models and len(r.models) < 3:
            r.models.append(model)
        verdict = None
        if kind == "error":
            verdict, r.exit_code = f"error({rec.exit_code})", rec.exit_code
        elif kind == "crash":
            verdict = "crash"
        elif (kind == "diff" and not rec.passed) or (kind == "kernel" and _nonfinite(rec)):
            verdict = "fail"
        elif kind in ("violation", "graph_break") or (kind == "recompile" and not rec.expected):
            verdict = "findings"
        if verdict:
            r.verdict = _worse(verdict, r.verdict)
    return list(runs.values())


def _nonfinite(k: Any) -> bool:
    return any(a.stats is not None and (a.stats.nan or a.stats.inf) and not a.uninitialised for a in k.args)


def _refs(obj: Any, out: set[str]) -> None:
    if isinstance(obj, dict):
        sha, path = obj.get("sha256"), obj.get("path")
        if isinstance(sha, str) and isinstance(path, str) and "size" in obj:
            out.add(Path(path).name)
        for v in obj.values():
            _refs(v, out)
    elif isinstance(obj, list):
        for v in obj:
            _refs(v, out)


def referenced(sources: Iterable[str]) -> set[str]:
    """File names (``<sha256><ext>``) of every blob any line of the streams points at."""
    out: set[str] = set()
    for line in read_stream(list(sources), want=()):
        if b'"sha256"' in line.raw:
            _refs(msgspec.json.decode(line.raw), out)
    return out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class Sweep:
    delete: list[Path] = field(default_factory=list)
    keep: int = 0
    bytes: int = 0


def plan_gc(store_root: Path, keep_names: set[str]) -> Sweep:
    sweep = Sweep()
    blobs = store_root / "blobs"
    if not blobs.is_dir():
        return sweep
    for sub in sorted(blobs.iterdir()):
        if not (sub.is_dir() and not sub.is_symlink() and re.fullmatch(r"[0-9a-f]{2}", sub.name)):
            continue
        for f in sorted(sub.iterdir()):
            owner = temp_owner(f.name)
            if owner is not None:
                if not _alive(owner):
                    sweep.delete.append(f)
                    sweep.bytes += f.lstat().st_size
                continue
            if not (_BLOB.fullmatch(f.name) and f.name.startswith(sub.name)):
                continue  # not something the store wrote: never ours to delete
            if f.name in keep_names:
                sweep.keep += 1
            else:
                sweep.delete.append(f)
                sweep.bytes += f.lstat().st_size
    return sweep
