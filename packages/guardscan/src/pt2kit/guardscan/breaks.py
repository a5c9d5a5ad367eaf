"""One graph break, read from the text Dynamo logs for it (``dynamo_graph_break_reason``)::

    Graph break in user code at /work/m.py:8
    Graph Break Reason: Encountered graph break when attempting to trace CALL: ...

    Unsupported Tensor.item() call with capture_scalar_outputs=False
      Explanation: ...
      Hint: Set `torch._dynamo.config.capture_scalar_outputs = True` ...
      Developer debug context: call_method TensorVariable() item () {}

     For more details about this graph break, please visit: https://.../gb/gb0124.html

    User code traceback:
      File "/work/m.py", line 8, in forward
        s = y.sum().item()

Older releases leave out the explanation block or the link; every field but the reason may be None.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_AT = re.compile(r"Graph break in user code at (?P<file>.+):(?P<line>\d+)\s*$", re.M)
_GB = re.compile(r"/gb/(gb\d+)", re.I)
_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)\n\s+(?P<code>.*)')
_CALL_METHOD = re.compile(r"call_method (?P<obj>\w+?)(?:Variable)?\(.*?\) (?P<name>\w+) ")
_CALL_FUNCTION = re.compile(r"call_function (?:\w+Variable)?\(?(?P<name>[\w.]+)")
_TYPES = {"Tensor": "Tensor", "UserDefinedObject": "object", "List": "list", "ConstDict": "dict", "Builtin": ""}


@dataclass
class BreakInfo:
    reason: str
    gb_id: str | None = None
    file: str | None = None
    line: int | None = None
    code: str | None = None
    call: str | None = None
    hints: list[str] = field(default_factory=list)
    explanation: str | None = None


def _call_of(context: str | None) -> str | None:
    if not context:
        return None
    m = _CALL_METHOD.search(context + " ")
    if m:
        obj = _TYPES.get(m.group("obj"), m.group("obj"))
        return f"{obj}.{m.group('name')}()" if obj else f"{m.group('name')}()"
    m = _CALL_FUNCTION.search(context)
    if m:
        return f"{m.group('name')}()"
    return None


def parse_break(text: str, torch_dir: str | None = None) -> BreakInfo:
    lines = text.splitlines()
    body = text.split("User code traceback:")[0]
    reason = None
    explanation = context = None
    hints: list[str] = []
    after_header = False
    for ln in body.splitlines():
        s = ln.strip()
        if s.startswith("Graph Break Reason:"):
            after_header = True
            tail = s.removeprefix("Graph Break Reason:").strip()
            if tail and not tail.startswith("Encountered graph break"):
                reason = tail
            continue
        if not after_header or not s:
            continue
        if s.startswith("Explanation:"):
            explanation = s.removeprefix("Explanation:").strip()
        elif s.startswith("Hint:"):
            hints.append(s.removeprefix("Hint:").strip())
        elif s.startswith("Developer debug context:"):
            context = s.removeprefix("Developer debug context:").strip()
        elif s.startswith("For more details"):
            continue
        elif reason is None:
            reason = s
    if reason is None:
        reason = next((ln.strip() for ln in lines if ln.strip()), "graph break")
    info = BreakInfo(reason=reason, explanation=explanation, hints=hints, call=_call_of(context))
    gb = _GB.search(text)
    if gb:
        info.gb_id = gb.group(1).upper()
    at = _AT.search(text)
    if at:
        info.file, info.line = at.group("file"), int(at.group("line"))
    frames = [m for m in _FRAME.finditer(text) if not (torch_dir and m.group("file").startswith(torch_dir))]
    for m in reversed(frames):
        if info.file is None or (m.group("file") == info.file and int(m.group("line")) == info.line):
            info.file, info.line = m.group("file"), int(m.group("line"))
            info.code = m.group("code").strip()
            break
    return info
