"""Records in, one :class:`Collection` out: runs, records by kind, the counts a summary shows.

Cost is linear in the number of records: one pass to collect, one pass per section to group.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pt2kit.schema import Header, Record, as_float
from pt2kit.schema.stream import Line


@dataclass
class RunInfo:
    run: str
    header: Header | None = None
    records: int = 0

    @property
    def tool(self) -> str:
        return f"{self.header.tool} {self.header.tool_version}" if self.header else "(no header)"


@dataclass
class Collection:
    runs: dict[str, RunInfo] = field(default_factory=dict)
    kinds: dict[str, list[Any]] = field(default_factory=dict)
    unknown: Counter[str] = field(default_factory=Counter)
    total: int = 0

    def add(self, line: Line) -> None:
        self.total += 1
        run = self.runs.get(line.run)
        if run is None:
            run = self.runs[line.run] = RunInfo(line.run)
        run.records += 1
        if line.record is None:
            self.unknown[line.kind] += 1
            return
        if line.kind == "header":
            run.header = line.record
        self.kinds.setdefault(line.kind, []).append(line.record)

    def of(self, kind: str) -> list[Any]:
        return self.kinds.get(kind, [])

    def store_for(self, rec: Record) -> str | None:
        run = self.runs.get(rec.run)
        return run.header.store if run and run.header else None


def collect(lines: Iterable[Line]) -> Collection:
    c = Collection()
    for line in lines:
        c.add(line)
    return c


def counts(c: Collection) -> dict[str, int]:
    diffs = c.of("diff")
    recompiles = c.of("recompile")
    kernels = c.of("kernel")
    return {
        "records": c.total,
        "runs": len(c.runs),
        "findings": len(c.of("violation")),
        "graphs": len(c.of("graph")),
        "diffs": len(diffs),
        "failing_diffs": sum(1 for d in diffs if not d.passed),
        "divergences": len(c.of("divergence")),
        "breaks": len(c.of("graph_break")),
        "guards": len(c.of("guard")),
        "recompiles": sum(1 for r in recompiles if not r.expected),
        "expected_recompiles": sum(1 for r in recompiles if r.expected),
        "advice": len(c.of("advice")),
        "kernels": len(kernels),
        "nonfinite_kernels": sum(1 for k in kernels if kernel_nonfinite(k)),
        "nonfinite_findings": sum(1 for k in kernels if k.finding),
        "benches": len(c.of("bench")),
        "repros": len(c.of("repro")),
        "crashes": len(c.of("crash")),
        "errors": len(c.of("error")),
        "unknown": sum(c.unknown.values()),
    }


def kernel_nonfinite(k: Any) -> bool:
    return any(a.stats and not a.uninitialised and (a.stats.nan or a.stats.inf) for a in k.args)


def environment(c: Collection) -> dict[str, list[str]]:
    """Tools (with versions), torch versions, devices and hosts seen in the headers, in order."""
    out: dict[str, list[str]] = {"tools": [], "torch": [], "devices": [], "hosts": []}
    for run in c.runs.values():
        h = run.header
        if h is None:
            continue
        for key, value in (("tools", f"{h.tool} {h.tool_version}"), ("torch", h.torch), ("devices", h.device),
                           ("hosts", h.host)):
            if value and value not in out[key]:
                out[key].append(value)
    return out


def group_violations(c: Collection) -> list[dict[str, Any]]:
    """model -> (constraint, op) -> findings, in first-seen order."""
    models: dict[str, dict[tuple[str, str], list[Any]]] = {}
    for v in c.of("violation"):
        groups = models.setdefault(v.model or "(no model)", {})
        groups.setdefault((v.constraint, v.op or "(input)"), []).append(v)
    return [
        {"model": m, "count": sum(len(x) for x in g.values()),
         "groups": [{"constraint": k[0], "op": k[1], "findings": items} for k, items in g.items()]}
        for m, g in models.items()
    ]


def captured_models(c: Collection) -> list[Any]:
    """The `model` records ``pt2kit capture`` wrote (graphs of the user's own script), each graph once: a
    record forwarded down a pipe, or read from several files, is the same graph."""
    seen: set[tuple[str, str, str]] = set()
    out = []
    for m in c.of("model"):
        if m.captured is None or (key := (m.model, m.captured.compile_id, m.captured.code.sha256)) in seen:
            continue
        seen.add(key)
        out.append(m)
    return out


def captured_line(m: Any) -> str:
    """Where a captured graph came from, in one line: ``python train.py: compile id 0/1, forward at
    train.py:12, inductor (max-autotune), dynamic, grad, under torch.autocast(cuda, bfloat16), rank 1, values
    small; the backend raised ...``."""
    from pt2kit_portable import autocast_words

    c = m.captured
    where = " at ".join(x for x in (c.function, c.source) if x)
    backend = (c.backend or "backend ?") + (f" ({c.mode})" if c.mode else "")
    parts = [f"compile id {c.compile_id}", where, backend, "dynamic" if c.dynamic else "",
             "grad" if c.grad else "", f"under {autocast_words(m.autocast)}" if getattr(m, "autocast", None) else "",
             f"rank {c.rank}" if c.rank is not None else "", f"values {c.values}"]
    line = f"{' '.join(c.command)}: " + ", ".join(p for p in parts if p)
    return line + (f"; the backend raised {c.error}" if c.error else "")


def by_constraint(c: Collection) -> dict[str, int]:
    return dict(Counter(v.constraint for v in c.of("violation")).most_common())


def fmt(x: Any, digits: int = 4) -> str:
    """Numbers for people: ``Num`` strings kept, floats in 4 significant digits."""
    if x is None:
        return ""
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, str):
        return x
    if isinstance(x, int):
        return str(x)
    value = as_float(x)
    return f"{value:.{digits}g}" if value is not None else ""


def speedup_text(b: Any, times: str = "x") -> str:
    """A bench's speedup and its interval, ``1.50x [1.45, 1.55]``; the interval only where both bounds
    are there (the schema lets either be null), and ``-`` with no speedup."""
    if b.speedup is None:
        return "-"
    both = b.speedup_lo is not None and b.speedup_hi is not None
    return f"{b.speedup:.2f}{times}" + (f" [{b.speedup_lo:.2f}, {b.speedup_hi:.2f}]" if both else "")
