"""fxcheck's records: a `graph` per captured graph (its printed code in the store), a `violation` per
distinct finding, an `error` for a graph the backend could not capture."""

from __future__ import annotations

from typing import Any

from pt2kit.schema import SCHEMA_MAJOR, Error, Graph, Store, Violation

from . import graphview
from .checks import Finding


def nodes(gm: Any) -> int:
    """Compute nodes: what a user counts as the graph's size (no placeholders, no output)."""
    return sum(1 for n in gm.graph.nodes if n.op not in ("placeholder", "output"))


def graph(gm: Any, phase: str, index: int, *, run: str, model: str | None, store: Store | None) -> Graph:
    code = store.put_text(gm.print_readable(print_output=False), "text/x-python", ".py") if store else None
    return Graph(v=SCHEMA_MAJOR, run=run, model=model, phase=phase, index=index, nodes=nodes(gm),
                 ops=graphview.op_counts(gm), code=code)


def violation(f: Finding, phase: str, index: int, *, run: str, model: str | None) -> Violation:
    t = f.tensor
    return Violation(
        v=SCHEMA_MAJOR, run=run, model=model, constraint=f.constraint, message=f.message,
        phase=phase, graph=index, node=f.node.name, op=f.op or f.node.op,
        dtype=t.dtype if t else None, shape=list(t.shape) if t else None,
        source=f.node.source, code=f.node.code, module=f.node.module, subgraph=f.node.subgraph,
    )


def capture_error(gm: Any, index: int, e: BaseException, *, run: str, model: str | None) -> Error:
    # torch decides what happens next (it may retry smaller graphs); the record says this one was not
    # captured, so a summary never counts part of a model as all of it
    lines = [ln for ln in str(e).strip().splitlines() if ln.strip()]
    why = f"{type(e).__name__}: {' '.join(lines[:3])}"[:1000]
    return Error(v=SCHEMA_MAJOR, run=run, model=model, exit_code=1, where=f"graph {index}",
                 message=f"graph {index} ({nodes(gm)} nodes) was not captured and checked: the backend failed "
                         f"with {why}")
