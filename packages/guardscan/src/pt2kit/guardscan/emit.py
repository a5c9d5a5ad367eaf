"""Findings as pt2kit records, in one order for live runs and trace directories. Imports no torch.

graph (one per compiled frame, its printed code in the store), graph_break, guard (every guard of
every compile), recompile, variant (live runs: which calls reused a graph), advice.
"""

from __future__ import annotations

import linecache
from collections.abc import Callable
from typing import Any

from pt2kit.schema import Advice, Graph, GraphBreak, Guard, Recompile, Store, Variant

from .advice import advise
from .analyze import Findings
from .guards import resolve_path
from .scan import Call

Emit = Callable[..., Any]


def _line(path: str | None, line: int | None) -> tuple[str | None, str | None]:
    if not path or not line:
        return None, None
    return f"{path}:{line}", (linecache.getline(path, line).strip() or None)


def emit_findings(f: Findings, emit: Emit, store: Store | None, *, model: str | None = None,
                  calls: list[Call] | None = None) -> dict[str, int]:
    for fr in f.frames:
        code = store.put_text(fr.code, "text/x-python", ".py") if (store is not None and fr.code) else None
        where = f"{fr.function} ({fr.file}:{fr.firstline})" if fr.function else None
        emit(Graph, model=model, phase="dynamo", index=fr.frame_id, nodes=fr.nodes, ops=fr.ops, code=code,
             frame=fr.compile_id, function=where)
    for b in f.breaks:
        source, code = _line(b.info.file, b.info.line)
        emit(GraphBreak, model=model, reason=b.info.reason, gb_id=b.info.gb_id, call=b.info.call, source=source,
             code=b.info.code or code, graph=b.frame_id, hints=b.info.hints, explanation=b.info.explanation,
             count=b.count)
    known = f.files
    for c in f.compiles:
        for g in c.guards:
            path = resolve_path(g.file, known)
            emit(Guard, model=model, frame=c.compile_id, guard=g.kind, expr=g.expr, source=g.source,
                 user_source=f"{path}:{g.line}" if path and g.line else None, code=g.code)
    for r in f.recompiles:
        emit(Recompile, model=model, frame=r.compile_id, reason=r.reason, guard=r.guard, trigger=r.trigger,
             expected=r.expected, function=r.function, source=r.source, code=r.code, reasons=r.reasons,
             compiled=not r.failed)
    for call in calls or []:
        emit(Variant, model=model, name=call.label, changes=call.changes, outcome=call.outcome,
             frames=call.compiles, error=call.error)
    advice = advise(f)
    for a in advice:
        emit(Advice, model=model, rule=a.rule, message=a.message, change=a.change, source=a.source)
    return {"graphs": len(f.frames), "breaks": len(f.breaks), "recompiles": len(f.recompiles),
            "unexpected": sum(not r.expected for r in f.recompiles), "advice": len(advice),
            "guards": sum(len(c.guards) for c in f.compiles)}
