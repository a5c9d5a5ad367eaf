"""Reading FX node metadata the way users want it: their own source line and the module path.

Works on the strings and dicts torch leaves in ``node.meta`` (``stack_trace``, ``nn_module_stack``);
imports torch only to know where torch itself lives, so its frames can be skipped.

A model file whose code is a printed FX graph (what ``pt2kit capture`` writes: ``print_readable``'s
``# File: train.py:12 in forward, code: ...`` above each statement) is read through to the line that
comment names, the user's own, not the model file's; its text is the comment's (the user's file is
not read). Not guaranteed: that such a comment tells the truth (it is text in the model file).
"""

from __future__ import annotations

import linecache
import os
import re
from functools import cache
from typing import Any

_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)')
# FX's comment above the statements one user line made (torch.fx.graph's codegen, verbose)
_FX_ORIGIN = re.compile(r"^# File: (?P<file>.+):(?P<line>\d+) in (?P<func>[^,]+), code: (?P<code>.*)$")
_ITEM = re.compile(r"\[(?:'([^']*)'|\"([^\"]*)\"|(\d+))\]")


@cache
def _torch_dir() -> str:
    import torch

    return os.path.dirname(torch.__file__)


def user_frame(stack_trace: str | None) -> tuple[str | None, str | None]:
    """(``file:line``, the line's text) of the innermost frame outside torch itself."""
    if not stack_trace:
        return None, None
    frames = list(_FRAME.finditer(stack_trace))
    for m in reversed(frames):
        path = m.group("file")
        if not path.startswith(_torch_dir()) and not path.startswith("<"):
            line = int(m.group("line"))
            return fx_origin(path, line) or (f"{path}:{line}", linecache.getline(path, line).strip() or None)
    if frames:
        m = frames[-1]
        return f"{m.group('file')}:{m.group('line')}", None
    return None, None


def fx_origin(path: str, line: int) -> tuple[str, str | None] | None:
    """(``file:line``, its code) that FX's ``# File:`` comment above line ``line`` of ``path`` names, when
    that line is a statement of a printed FX graph (the statements of one user line follow their comment
    with no blank line between); None for any other line."""
    for n in range(line - 1, 0, -1):
        text = linecache.getline(path, n).strip()
        if not text or text.startswith(("def ", "class ", "@")):
            return None
        if text.startswith("#"):
            m = _FX_ORIGIN.match(text)
            return (f"{m.group('file')}:{m.group('line')}", m.group("code").strip() or None) if m else None
    return None


def module_path(nn_module_stack: dict[str, Any] | None) -> str | None:
    """``L['self'].layers[0].conv`` -> ``layers.0.conv`` (the innermost module; None for the root)."""
    if not nn_module_stack:
        return None
    value = list(nn_module_stack.values())[-1]
    path = value[0] if isinstance(value, tuple) else str(value)
    path = re.sub(r"^L\[['\"]\w+['\"]\]\.?|^self\.?", "", path)  # the compiled root: L['self'], L['fn']
    path = _ITEM.sub(lambda m: "." + next(g for g in m.groups() if g is not None), path)
    return path.strip(".") or None


def node_place(node: Any) -> tuple[str | None, str | None, str | None]:
    """(source ``file:line``, that line, module path) of an FX node."""
    source, code = user_frame(node.meta.get("stack_trace"))
    return source, code, module_path(node.meta.get("nn_module_stack"))
