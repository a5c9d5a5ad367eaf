"""Flattening model outputs (and inputs) to named leaves.

Guarantees:

* Names follow torch's pytree key paths under a root name: ``out`` for a lone tensor, ``out[0]``,
  ``out['logits']``, ``out.hidden`` (dataclass or namedtuple field). Mappings (HF ``ModelOutput`` is
  one) are walked in their own key order, so names are stable from run to run.
* Other classes registered with torch's pytree are walked with the keys they register.
* An object pytree does not know (a transformers ``DynamicCache``, an ``EncoderDecoderCache``, any
  container class) is walked through its public attributes that hold tensors, in definition order:
  ``out['past_key_values'].layers[0].keys``. Its other attributes (dtypes, devices, flags) are
  metadata, not outputs, and are left out. An object that holds no tensor is one leaf.
* Leaves are tensors, plain values (``None``, bool, int, float, complex, str) and such opaque
  objects; :func:`is_plain` tells which non-tensor leaves may be compared by value.
* A reference back to an object being walked (a cycle) is skipped; very deep nesting ends the walk
  at that point (the object is one leaf).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ..shims.torchapi import pytree_key_children

_PLAIN = (int, float, bool, str, complex)
_MAX_DEPTH = 64


def flatten(obj: Any, root: str = "out") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    _walk(obj, root, out, set(), 0)
    return out


def is_tensor(obj: Any) -> bool:
    return any(c.__name__ == "Tensor" and c.__module__.startswith("torch") for c in type(obj).__mro__)


def is_plain(obj: Any) -> bool:
    """A leaf whose value means the same on both sides of a comparison (None, bool, int, float, str)."""
    return obj is None or isinstance(obj, _PLAIN)


def _walk(obj: Any, path: str, out: list[tuple[str, Any]], seen: set[int], depth: int) -> None:
    if id(obj) in seen and not (is_tensor(obj) or is_plain(obj)):
        return  # a reference back to an object being walked: its leaves are named once, on the way down
    if is_tensor(obj) or is_plain(obj) or depth > _MAX_DEPTH:
        out.append((path, obj))
        return
    children = _children(obj)
    if children is None:
        out.append((path, obj))
        return
    seen.add(id(obj))
    for suffix, child in children:
        _walk(child, path + suffix, out, seen, depth + 1)
    seen.discard(id(obj))


def _children(obj: Any) -> list[tuple[str, Any]] | None:
    """(key-path suffix, child) for a container, None for a leaf."""
    if isinstance(obj, Mapping):
        return [(f"[{k!r}]", v) for k, v in obj.items()]
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return [(f".{k}", getattr(obj, k)) for k in obj._fields]
    if isinstance(obj, tuple | list):
        return [(f"[{i}]", v) for i, v in enumerate(obj)]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return [(f".{f.name}", getattr(obj, f.name)) for f in dataclasses.fields(obj)]
    registered = pytree_children(obj)
    if registered is not None:
        return registered
    attrs = _public_attributes(obj)
    kept = [(f".{k}", v) for k, v in attrs if _holds_tensor(v, set(), 0)]
    return kept or None


def pytree_children(obj: Any) -> list[tuple[str, Any]] | None:
    """Children of an object of a class registered with torch's pytree, keyed as pytree keys them
    (None: not registered, or torch not imported; see :func:`..shims.torchapi.pytree_key_children`)."""
    return pytree_key_children(obj)


def _public_attributes(obj: Any) -> list[tuple[str, Any]]:
    names: list[str] = []
    d = getattr(obj, "__dict__", None)
    if isinstance(d, dict):
        names += list(d)
    for cls in type(obj).__mro__:
        for s in getattr(cls, "__slots__", ()) or ():
            if isinstance(s, str) and s not in names:
                names.append(s)
    out = []
    for n in names:
        if n.startswith("_"):
            continue
        try:
            out.append((n, getattr(obj, n)))
        except Exception:
            continue
    return out


def _holds_tensor(obj: Any, seen: set[int], depth: int) -> bool:
    if is_tensor(obj):
        return True
    if is_plain(obj) or depth > _MAX_DEPTH or id(obj) in seen or isinstance(obj, type):
        return False
    seen.add(id(obj))
    if isinstance(obj, Mapping):
        items: Any = obj.values()
    elif isinstance(obj, tuple | list | set | frozenset):
        items = obj
    elif callable(obj) or type(obj).__module__ == "torch":  # functions, modules, dtypes, devices
        return False
    else:
        items = [v for _, v in _public_attributes(obj)]
    return any(_holds_tensor(v, seen, depth + 1) for v in items)
