"""Findings as pt2kit records, in one order for live runs and trace directories. Imports no torch.

graph (one per compiled frame, its printed code in the store), graph_break, guard, recompile,
variant (live runs: which calls reused a graph, and the graphs and breaks of each as
``torch._dynamo.explain`` counts them), advice.

Guards are thousands per compile on a real model (one per parameter, global, config flag...). Each
compile gets one `guard` record per guard a user-made line created (outside torch and installed
libraries), then one per (kind, input) for the rest with ``count`` saying how many it stands for;
every record of a compile points at the compile's whole guard tree (``full``, one blob in the
store), so nothing is lost and a page stays small.
"""

from __future__ import annotations

import linecache
import re
from collections.abc import Callable
from typing import Any

import msgspec

from pt2kit.schema import Advice, Graph, GraphBreak, Guard, Recompile, Store, Variant

from .advice import advise
from .findings import Findings
from .guards import resolve_path
from .live import Call

Emit = Callable[..., Any]


class Counts(msgspec.Struct, kw_only=True):
    """What one model's (or one trace log's) records came to: the summary line and the exit code read it."""

    graphs: int  # distinct graphs (one per compiled frame)
    breaks: int  # distinct graph breaks
    recompiles: int
    unexpected: int  # recompiles automatic dynamic shapes does not explain
    advice: int
    guards: int  # every guard of every compile, summarised records included
    all_graphs: int = 0  # the first call's graphs, as torch._dynamo.explain counts them
    all_breaks: int = 0  # the first call's breaks, as explain counts them
    why_counts: str = ""  # why explain's counts differ from the distinct ones ("" where they agree)
    limit_hits: int = 0  # compiles the recompile limit stopped


def _line(path: str | None, line: int | None, read: bool = True) -> tuple[str | None, str | None]:
    if not path or not line:
        return None, None
    return f"{path}:{line}", ((linecache.getline(path, line).strip() or None) if read else None)


_INPUT = re.compile(r"""^([LG]\[['"][^'"]+['"]\])((?:\[['"][^'"]+['"]\]|\[\d+\]))?""")


def _input_of(source: str | None) -> str | None:
    """The input a guard source hangs from: ``L['self']``, ``G['torch']``, ``L['kwargs']['input_ids']``."""
    if not source:
        return None
    m = _INPUT.match(source)
    if not m:
        return source
    head, key = m.group(1), m.group(2)
    return head + key if key and head in ("L['kwargs']", "L['args']") else head


def _user_made(path: str | None, torch_dir: str | None) -> bool:
    if not path or not path.startswith("/"):
        return False
    if torch_dir and path.startswith(torch_dir.rstrip("/") + "/"):
        return False
    return "/site-packages/" not in path and "/dist-packages/" not in path


def emit_findings(f: Findings, emit: Emit, store: Store | None, *, model: str | None = None,
                  calls: list[Call] | None = None, read_sources: bool = True) -> Counts:
    """``f`` as records through ``emit``. ``read_sources=False`` for a trace a stream named (a captured
    script's): a line's text then comes from the trace alone, never from reading the file it names,
    since a stream may not make a tool read a file outside the store."""
    for fr in f.frames:
        code = store.put_text(fr.code, "text/x-python", ".py") if (store is not None and fr.code) else None
        where = f"{fr.function} ({fr.file}:{fr.firstline})" if fr.function else None
        emit(Graph, model=model, phase="dynamo", index=fr.frame_id, nodes=fr.nodes, ops=fr.ops, code=code,
             frame=fr.compile_id, function=where)
    for b in f.breaks:
        source, code = _line(b.info.file, b.info.line, read_sources)
        emit(GraphBreak, model=model, reason=b.info.reason, gb_id=b.info.gb_id, call=b.info.call, source=source,
             code=b.info.code or code, graph=b.frame_id, hints=b.info.hints, explanation=b.info.explanation,
             count=b.count)
    known = f.files
    for c in f.compiles:
        full = store.put_text(c.guards_text, "text/plain", ".txt") if (store is not None and c.guards_text) else None
        groups: dict[tuple[str, str | None], list[Any]] = {}
        mine = []
        for g in c.guards:
            path = resolve_path(g.file, known, f.torch_dir)
            where = f"{path}:{g.line}" if path and g.line else None
            if _user_made(path, f.torch_dir):
                mine.append((g, where))
            else:
                groups.setdefault((g.kind, _input_of(g.source)), []).append((g, where))
        for g, where in mine:
            emit(Guard, model=model, frame=c.compile_id, guard=g.kind, expr=g.expr, source=g.source,
                 user_source=where, code=g.code, user=True, full=full)
        for (kind, src), members in groups.items():
            g, where = members[0]
            emit(Guard, model=model, frame=c.compile_id, guard=kind, expr=g.expr, source=src or g.source,
                 user_source=where, code=g.code, count=len(members), full=full)
    for r in f.recompiles:
        emit(Recompile, model=model, frame=r.compile_id, reason=r.reason, guard=r.guard, trigger=r.trigger,
             expected=r.expected, function=r.function, source=r.source, code=r.code, reasons=r.reasons,
             compiled=not r.failed)
    for call in calls or []:
        graphs, breaks = f.totals.get(call.label, (0, 0))
        emit(Variant, model=model, name=call.label, changes=call.changes, outcome=call.outcome,
             frames=call.compiles, error=call.error, graphs=graphs, breaks=breaks)
    advice = advise(f)
    for a in advice:
        emit(Advice, model=model, rule=a.rule, message=a.message, change=a.change, source=a.source)
    label = calls[0].label if calls else None
    first = f.totals.get(label)
    return Counts(graphs=len(f.frames), breaks=len(f.breaks), recompiles=len(f.recompiles),
                  all_graphs=first[0] if first else 0, all_breaks=first[1] if first else 0,
                  why_counts=why_counts(f, label), unexpected=sum(not r.expected for r in f.recompiles),
                  advice=len(advice), guards=sum(len(c.guards) for c in f.compiles), limit_hits=len(f.limit_hits))


def why_counts(f: Any, label: str | None) -> str:
    """Why explain's counts of one call differ from guardscan's distinct ones ("" where they agree).

    explain counts every graph Dynamo compiled during the call (a frame compiled again counts again)
    and calls each graph after the first a break, whether or not a break made it; guardscan counts
    each frame's graph once over all calls, and a break only where torch gave a reason."""
    totals = f.totals.get(label)
    if not totals or (totals[0], totals[1]) == (len(f.frames), len(f.breaks)):
        return ""
    frames = {c.frame_id for c in f.compiles if c.variant == label and c.graph is not None}
    why = []
    again = totals[0] - len(frames)
    if again > 0:
        why.append(f"{again} of its graph(s) recompiled a frame already compiled in that call, counted again")
    if totals[1] > len(f.breaks):
        others = [fr for fr in f.frames if fr.frame_id in frames][1:]
        named = ", ".join(f"{fr.function} ({fr.file.rpartition('/')[2]})" if fr.function and fr.file else f"frame {fr.frame_id}"
                          for fr in others)
        why.append(f"explain counts every graph after the first as a break ({totals[1]}), though only "
                   f"{len(f.breaks)} came from a graph break torch gave a reason for (the others are separate frames "
                   f"Dynamo compiled on their own{f': {named}' if named else ''}, or recompiles)")
    if len(f.frames) > len(frames):
        why.append(f"{len(f.frames) - len(frames)} distinct graph(s) came from later calls")
    return "; ".join(why)
