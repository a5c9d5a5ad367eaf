"""Dynamo's guard tree text (the ``dynamo_cpp_guards_str`` trace event) as one entry per guard.

The text is what ``TORCH_LOGS=guards`` prints::

    | +- GuardManager: source=L['x'], accessed_by=FrameLocalsGuardAccessor(...), type=<class 'torch.Tensor'>
    | | +- TENSOR_MATCH: check_tensor(L['x'], ..., size=[4, 8], ...)  # if x.shape[0] > 4:  # mp/m.py:4 in forward
    +- LAMBDA_GUARD: 5 <= L['x'].size()[0]  # if x.shape[0] > 4:  # mp/m.py:4 in forward (_dynamo/...)

A guard's source is the innermost manager above it (or the ``L['x']`` its expression starts from);
torch shortens paths (``torch.utils._traceback.shorten_filename``: the part after the common
prefix with torch's directory, one character too many when that prefix is ``/``), so
:func:`resolve_path` maps them back to a file the trace named in full or that exists here.
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass

_NODE = re.compile(r"^(?P<indent>(?:\| )*)\+- (?P<kind>[A-Za-z_]+): ?(?P<rest>.*)$")
_MANAGER_SOURCE = re.compile(r"source=(?P<source>.+?), accessed_by=")
# "file:line in func", alone or in torch's parentheses ("# (_dynamo/output_graph.py:3375 in remove_...)")
_LOCATION = re.compile(r"\(?(?P<file><[^<>]+>|[^\s(]\S*):(?P<line>\d+) in (?P<func>[\w<>.]+)")
_EXPR_SOURCE = re.compile(r"""((?:L|G)\[['"][^'"]+['"]\](?:\.[A-Za-z_]\w*|\[[^\]]*\])*?)(?=\.size\(\)|\.stride\(\)|\.storage_offset\(\)|$|[\s,)])""")


@dataclass
class GuardEntry:
    kind: str  # TENSOR_MATCH, LAMBDA_GUARD, ...
    expr: str
    source: str | None  # L['x']
    code: str | None = None  # the user's line that made the guard
    file: str | None = None  # as torch printed it (maybe shortened)
    line: int | None = None


def split_comment(text: str) -> tuple[str, str | None, tuple[str, int] | None]:
    """``expr  # code  # file:line in func (...)`` -> (expr, code, (file, line)). Only the first line: torch
    2.13's recompile reason goes on with a "User stack trace" whose last line is the code again, so a code
    line ending in its own ``# comment`` would otherwise end the text in that comment, not the location."""
    parts = text.partition("\n")[0].split("  # ")
    expr = parts[0].strip()
    code = loc = None
    if len(parts) >= 2:
        tail = parts[-1]
        m = _LOCATION.search(tail)
        if m and len(parts) >= 3:
            code = "  # ".join(parts[1:-1]).strip() or None
            loc = (m.group("file"), int(m.group("line")))
        elif m:
            loc = (m.group("file"), int(m.group("line")))
        else:
            code = "  # ".join(parts[1:]).strip() or None
    return expr, code, loc


def expr_source(expr: str) -> str | None:
    """The first ``L['x']``-style source an expression reads."""
    m = _EXPR_SOURCE.search(expr)
    return m.group(1) if m else None


def parse_guards(text: str) -> list[GuardEntry]:
    managers: dict[int, str | None] = {}
    out: list[GuardEntry] = []
    for raw in text.splitlines():
        m = _NODE.match(raw.rstrip())
        if not m:
            continue
        depth = len(m.group("indent")) // 2
        kind, rest = m.group("kind"), m.group("rest")
        if kind.endswith("GuardManager"):
            src = _MANAGER_SOURCE.search(rest)
            managers[depth] = src.group("source") if src else None
            for d in [d for d in managers if d > depth]:
                del managers[d]
            continue
        expr, code, loc = split_comment(rest)
        owner = next((managers[d] for d in sorted(managers, reverse=True) if d < depth and managers[d]), None)
        out.append(GuardEntry(kind=kind, expr=expr, source=expr_source(expr) or owner, code=code,
                              file=loc[0] if loc else None, line=loc[1] if loc else None))
    return out


def resolve_path(shown: str | None, known: list[str], torch_dir: str | None = None) -> str | None:
    """Map torch's shortened path back to a full one: a file the trace names that ends so, else the
    file torch's shortening came from (below an ancestor of torch's directory) where it exists here;
    else as shown. ``<frozen x>`` and other pseudo-files stay as they are."""
    if not shown:
        return None
    if shown.startswith(("/", "<")):
        return shown
    # below torch's directory or an ancestor: "/" + shown ends the path; below "/" alone, torch cut
    # one character too many ("/tmp/gs/m.py" shows as "mp/gs/m.py")
    hits = [k for k in known if k.endswith("/" + shown) or k == shown or (k.startswith("/") and k[2:] == shown)]
    hits = [k for k in hits if "/site-packages/" not in k] or hits
    if hits:
        return hits[0]
    if torch_dir:
        anc = torch_dir.rstrip("/")  # shorten_filename's base: torch's own directory, then its ancestors
        while anc and anc != os.path.dirname(anc):
            cand = os.path.join(anc, shown)
            if os.path.isfile(cand):
                return cand
            anc = os.path.dirname(anc)
        # common prefix "/": torch cut one character too many
        found = sorted(glob.glob("/?" + glob.escape(shown)))
        if len(found) == 1:
            return found[0]
    return shown
