"""Flattening model outputs (and inputs) to named leaves.

Names follow torch's pytree key paths under a root name: ``out`` for a lone tensor, ``out[0]``,
``out['logits']``, ``out.hidden`` (dataclass or namedtuple field). Mappings (HF ``ModelOutput`` is
one) are walked in their own key order, so names are stable from run to run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any


def flatten(obj: Any, root: str = "out") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    _walk(obj, root, out)
    return out


def _walk(obj: Any, path: str, out: list[tuple[str, Any]]) -> None:
    if type(obj).__name__ in ("Tensor", "Parameter") or obj is None or isinstance(obj, int | float | bool | str | complex):
        out.append((path, obj))
    elif isinstance(obj, Mapping):
        for k, v in obj.items():
            _walk(v, f"{path}[{k!r}]", out)
    elif isinstance(obj, tuple) and hasattr(obj, "_fields"):
        for k in obj._fields:
            _walk(getattr(obj, k), f"{path}.{k}", out)
    elif isinstance(obj, tuple | list):
        for i, v in enumerate(obj):
            _walk(v, f"{path}[{i}]", out)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            _walk(getattr(obj, f.name), f"{path}.{f.name}", out)
    else:
        out.append((path, obj))
