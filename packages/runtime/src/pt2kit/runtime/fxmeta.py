"""Reading FX node metadata the way users want it: their own source line and the module path.

Works on the strings and dicts torch leaves in ``node.meta`` (``stack_trace``, ``nn_module_stack``);
imports torch only to know where torch itself lives, so its frames can be skipped.
"""

from __future__ import annotations

import linecache
import os
import re
from functools import cache
from typing import Any

_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)')
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
            return f"{path}:{line}", linecache.getline(path, line).strip() or None
    if frames:
        m = frames[-1]
        return f"{m.group('file')}:{m.group('line')}", None
    return None, None


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
