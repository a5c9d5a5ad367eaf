"""Where a compiled frame's inputs came from in the user's own code, and what the user calls them there.

A frame Dynamo compiled names its inputs by its own parameters (``L['kwargs']['input_ids']`` in the
``wrapper(self, *args, **kwargs)`` transformers puts round every forward, ``L['x']`` in a plain forward);
the user's script has neither name. What it has is the line that called the compiled model, which
Dynamo's ``dynamo_start`` event quotes with the stack it compiled under. Imports no torch.

Guarantees:

* :func:`call_sites`: per compile id, the innermost frame of that stack, below the compiled one, that is
  the user's (a real path outside torch and installed libraries), with its line as the trace quotes it.
  ``direct`` says that only torch's own frames lie between that line and the compiled frame, so the
  line's call is the call into the compiled code (not ``trainer.train()`` calling a library that calls it).
* :func:`argument`: the expression the user passed, read from that line: ``ids`` from ``model(ids)`` for
  ``args[0]``, ``batch['input_ids']`` from ``model(**batch)`` for ``kwargs['input_ids']``, ``mask`` from
  ``model(x, attention_mask=mask)``; only an expression the user can name again (a variable, an attribute,
  an index of one). Any doubt (two calls on the line that could be it, an argument built in place, a
  statement spread over lines, an indirect call) is None: a wrong name is worse than none.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any

from .tracelog import Trace

_LIBRARIES = ("/site-packages/", "/dist-packages/")


@dataclass(frozen=True)
class CallSite:
    where: str  # the user's file:line
    code: str | None  # that line, as the trace quotes it
    direct: bool  # only torch's frames between it and the compiled frame: its call is the compiled call


def _torch_dirs(trace: Trace, torch_dir: str | None) -> tuple[str, ...]:
    """torch's directory: the one given, and the one the trace's own files show (torch interns its
    ``_dynamo/convert_frame.py`` first), so a torch built from a checkout is torch too."""
    dirs = [torch_dir.rstrip("/") + "/"] if torch_dir else []
    for path in trace.strings.values():
        head, sep, _ = path.rpartition("/torch/_dynamo/")
        if sep and head.startswith("/"):
            dirs.append(head + "/torch/")
    return tuple(dict.fromkeys(dirs))


def call_sites(trace: Trace, torch_dir: str | None = None) -> dict[str, CallSite]:
    """Each compile's user call site, from its ``dynamo_start`` stack (compile id -> :class:`CallSite`)."""
    torch_dirs = _torch_dirs(trace, torch_dir)

    def path(frame: dict[str, Any]) -> str:
        f = frame.get("filename")
        return trace.strings.get(f, "") if isinstance(f, int) else str(f or "")

    def is_torch(p: str) -> bool:
        return p.startswith(torch_dirs) or "/site-packages/torch/" in p

    out: dict[str, CallSite] = {}
    for ev in trace.events:
        stack = ev.body.get("stack") if ev.kind == "dynamo_start" and isinstance(ev.body, dict) else None
        if ev.compile_id is None or ev.compile_id in out or not isinstance(stack, list) or len(stack) < 2:
            continue
        frames = [fr for fr in stack if isinstance(fr, dict)]
        for i in range(len(frames) - 2, -1, -1):  # the last frame is the one compiled
            p = path(frames[i])
            if p.startswith("/") and not is_torch(p) and not any(lib in p for lib in _LIBRARIES):
                between = [path(fr) for fr in frames[i + 1:-1]]
                out[ev.compile_id] = CallSite(f"{p}:{frames[i].get('line')}", frames[i].get("loc"),
                                              bool(between) and all(is_torch(b) for b in between))
                break
    return out


_NAME = re.compile(r"^(?:(?P<c>args|kwargs)\[(?P<k>\d+|'[^']*'|\"[^\"]*\")\]|(?P<n>[A-Za-z_]\w*))(?P<rest>.*)$")


def argument(tensor: str, code: str | None) -> str | None:
    """What the call on ``code`` passed as the frame's ``tensor`` (Dynamo's name: ``kwargs['input_ids']``,
    ``args[0]``, ``x``, with any index after it), as the user can write it; None where not sure."""
    m = _NAME.match(tensor)
    if not m or not code or m.group("n") == "self":
        return None
    try:
        tree = ast.parse(code.strip())
    except SyntaxError:
        return None  # one line of a statement spread over several
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    if m.group("c") == "args":
        expr = _positional(calls, int(m.group("k")))
    else:
        keyword = m.group("k")[1:-1] if m.group("c") else m.group("n")
        expr = _keyword(calls, keyword, plain=m.group("n") is not None)
    return None if expr is None else expr + m.group("rest")


def _positional(calls: list[ast.Call], i: int) -> str | None:
    fits = [c for c in calls if len(c.args) > i and not any(isinstance(a, ast.Starred) for a in c.args[:i + 1])]
    return _named(fits[0].args[i]) if len(fits) == 1 else None


def _keyword(calls: list[ast.Call], key: str, *, plain: bool) -> str | None:
    given = [kw.value for c in calls for kw in c.keywords if kw.arg == key]
    if given:
        return _named(given[0]) if len(given) == 1 else None
    # ``**batch``: the key is batch's; a plain parameter could also have come by position, so not then
    splats = [(c, kw.value) for c in calls for kw in c.keywords if kw.arg is None]
    if len(splats) != 1 or (plain and splats[0][0].args):
        return None
    base = _named(splats[0][1])
    return None if base is None else f"{base}[{key!r}]"


def _named(node: ast.expr) -> str | None:
    """``node``'s source where the user can name it again: a variable, its attribute, a constant index of one."""
    n: ast.expr = node
    while isinstance(n, ast.Attribute | ast.Subscript):
        if isinstance(n, ast.Subscript) and not isinstance(n.slice, ast.Constant):
            return None
        n = n.value
    return ast.unparse(node) if isinstance(n, ast.Name) else None
