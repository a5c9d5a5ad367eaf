"""What fails, at the head of the page: one row a failing model, with the line it points at, the stage it
failed in and its repro, before the profile findings, benchmarks and graphs a triaging reader reads later.

A model fails where a diff of it fails, a crash names it, a kernel of it writes NaN/Inf, or minify made a
repro of it (a violation minify cut to a repro is a failure of the model too). Rows keep the order the
stream first names each model. The line is the first divergence's (else the first NaN kernel's source);
the stage, the phase and subgraph the divergence or repro is in, or the crash's stage, and the compiler
stage minify's bisection names (a `bisect` record: checked, or said to be untold) with the PyTorch
switches that show it. ``mine``: the user's own line a failure points at (the divergence's where it is the
user's, else the line that called the compiled code), ``mine_is_op`` whether it is the op's own: what the
page's "where" and pt2kit triage's bug report lead with, the store's captured-graph line after it.
``crashes``: the `crash` records the row lists (what a report shows as the error).

A crash naming no graph is the process's own end (the command's, a ``with pt2kit.capture()`` block's, a
tool's child's) or a failure before any graph (torch.export's): one row of its own, :data:`PROCESS`, with
minify's script-level repro and its bisection (they name no graph either), never a placeholder model. A
process that died of a graph's failure is that failure, listed once, under the graph (:func:`died_of`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .collection import Collection, kernel_nonfinite

MODEL = "(model)"  # a diff or kernel of a model the stream names no label for
PROCESS = "(the process)"  # the row of what names no graph: the process's own end, a script-level repro


def died_of(x: Any, crashes: list[Any]) -> Any | None:
    """The graph's crash of its run that ``x``, a crash naming no graph, is the process's end of (capture
    writes the graph's crash, then the command's or the block's own end), or None: its message holds the
    graph's (a script that raised it), or the graph was killed and the end says no more than that (the
    same signal, or the exit code of a launcher whose worker it killed; not a timeout, which is news)."""
    if x.model is not None:
        return None
    said = (x.message or "").strip()
    for g in (g for g in crashes if g.model and g.run == x.run):
        message = (g.message or "").strip()
        if message and message in said:
            return g
        if g.signal and x.stage == "run" and x.exception is None and x.signal in (None, g.signal) \
                and not said.startswith("timed out"):
            return g
    return None


# the note Dynamo appends to an error raised while it compiled a frame (its tracing or the backend it called,
# never the compiled code's run): the frames it was tracing, outermost first, each a `File "p", line N, in f`
# line and the line's source (torch/_dynamo/exc.py's augment_exc_message, the same on 2.11 and 2.13)
_USER_CODE = "\nfrom user code:\n"
_FRAME = re.compile(r'^ *File "(?P<file>[^"\n]+)", line (?P<line>\d+), in [^\n]*\n(?P<code>[^\n]*)', re.M)


def dynamo_user_line(message: str | None) -> tuple[str, str] | None:
    """(``path:line``, its source) of the innermost user frame Dynamo names in an error it raised compiling
    (the op's own line: a fake-tensor call, a graph break under fullgraph=True), or None: the message carries
    no such note. A crash naming no graph holds no line of its own; this is where the user's code failed."""
    _, sep, frames = (message or "").rpartition(_USER_CODE)
    found = list(_FRAME.finditer(frames)) if sep else []
    return (f"{found[-1]['file']}:{found[-1]['line']}", found[-1]["code"].strip()) if found else None


def in_store(path: str | None) -> bool:
    """A line of a captured model file in the store (a node with no line of the user's: a module compiled whole)."""
    return bool(path) and "/blobs/" in str(path)


def _mine(c: Collection, r: dict[str, Any]) -> None:
    """The row's ``mine`` and ``mine_is_op`` (the module docstring says what)."""
    if r["where"] and not in_store(r["where"]):
        r.update(mine=r["where"], mine_is_op=True)
        return
    m = next((m for m in c.of("model") if m.model == r["model"]), None)
    cap = m.captured if m is not None else None
    r.update(mine=(cap.called_from or cap.source) if cap is not None else None, mine_is_op=False)


def _stage(phase: str | None, subgraph: str | None) -> str | None:
    parts = [f"{phase} graph" if phase else None, f"inside {subgraph}" if subgraph else None]
    return ", ".join(p for p in parts if p) or None


def failures(c: Collection, blob: Callable[[Any, Any], Any]) -> list[dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}

    def row(model: str | None, unnamed: str = MODEL) -> dict[str, Any]:
        key = model or unnamed
        return rows.setdefault(key, {"model": key, "what": [], "where": None, "code": None, "op": None,
                                     "stage": None, "repro": None, "bisect": None, "crashes": []})

    diffs: dict[str, list[Any]] = {}
    for d in c.of("diff"):
        diffs.setdefault(d.model or MODEL, []).append(d)
    for model, ds in diffs.items():
        bad = [d for d in ds if not d.passed]
        if bad:
            row(model)["what"].append(f"{len(bad)} of {len(ds)} outputs and gradients fail against the reference "
                                      f"({', '.join(d.output for d in bad[:3])}{', ...' if len(bad) > 3 else ''})")
    for v in c.of("divergence"):
        r = row(v.model)
        if r["where"] is None and r["op"] is None:
            r.update(where=v.source, code=v.code, op=v.op or v.node, stage=r["stage"] or _stage(v.phase, v.subgraph))
    for k in c.of("kernel"):
        if kernel_nonfinite(k):
            r = row(k.model)
            r["what"].append(f"kernel {k.name} writes NaN/Inf")
            if r["where"] is None and k.sources:
                r.update(where=k.sources[0], code=(k.code or [None])[0])
    crashes = c.of("crash")
    for x in crashes:
        graph = died_of(x, crashes)
        if graph is not None:  # one failure, listed once, under the graph; its error, the process's end too
            row(graph.model)["crashes"].append(x)
            continue
        r = row(x.model, PROCESS)
        why = x.signal or x.exception or (f"exit {x.exitcode}" if x.exitcode is not None else "crash")
        message = (x.message or "").strip().splitlines()
        # the process died of what torch.compile raised compiling (Dynamo's note says so, and where): the
        # stage is compile, not the command's run, and the line is the user's, never a guess
        user = dynamo_user_line(x.message) if x.model is None else None
        stage = "compile" if user else x.stage
        r["what"].append(f"{why} during {stage}" + (f": {message[0][:200]}" if message else ""))
        r["stage"] = r["stage"] or stage
        if user and r["where"] is None:
            r["where"], r["code"] = user
        r["crashes"].append(x)
    for rep in c.of("repro"):
        r = row(rep.model, PROCESS)
        if not r["what"]:
            r["what"].append(f"{rep.failure}" + (f": {rep.signature}" if rep.signature and rep.signature != rep.failure
                                                 else ""))
        r["repro"] = {"r": rep, "file": blob(rep, rep.path)}
        r["stage"] = r["stage"] or _stage(rep.phase, rep.subgraph)
    for b in c.of("bisect"):
        r = rows.get(b.model or PROCESS)
        if r is not None and r["bisect"] is None:  # a model that fails: its first repro's bisection
            r["bisect"] = {"verdict": b.verdict, "found": b.found,
                           "env": " ".join(f"{k}={v}" for k, v in b.env.items()) if b.found else ""}
    for r in rows.values():
        _mine(c, r)
    return list(rows.values())
