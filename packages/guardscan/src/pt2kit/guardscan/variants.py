"""Input variants that provoke recompiles: ``--vary [INPUT:]KEY=VALUE[,KEY=VALUE...]``.

KEY is a dimension number (its new size), ``dtype``, ``device`` or ``requires_grad`` (``=true`` may be
left out). INPUT names one argument of the model's forward (or its position, ``#0``); without it the
change applies to every tensor input that has the dimension. Examples::

    --vary 0=16              dim 0 of every tensor input becomes 16
    --vary x:1=32,0=2        x becomes [2, 32, ...]
    --vary dtype=bfloat16    every floating input in bfloat16
    --vary mask:requires_grad
    --vary device=cuda

A nested jagged input varies in dim 0 only (how many sequences, the old ones taken in turn).

Parsing needs no torch (bad specs are exit 2 before anything loads); :func:`apply` needs it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pt2kit.runtime.common.errors import UsageError
from pt2kit.runtime.common.tensors import jagged

_DTYPES = ("float16", "bfloat16", "float32", "float64", "half", "float", "double", "int8", "int16", "int32",
           "int64", "uint8", "bool", "complex64", "complex128", "float8_e4m3fn", "float8_e5m2")
FORMAT = "[INPUT:]KEY=VALUE[,KEY=VALUE...] with KEY a dimension number, dtype, device or requires_grad"


@dataclass
class Variant:
    spec: str
    target: str | None = None  # input name or "#position"
    sizes: dict[int, int] = field(default_factory=dict)
    dtype: str | None = None
    device: str | None = None
    requires_grad: bool | None = None
    scale: float | None = None  # default variants: dim 0 times this


def parse_vary(spec: str) -> Variant:
    text = spec.strip()
    target = None
    head, sep, rest = text.partition(":")
    if sep and "=" not in head:
        if not re.fullmatch(r"#\d+|[A-Za-z_]\w*", head.strip()):
            raise UsageError(f"--vary {spec!r}: {head!r} is not an input name or #position")
        target, text = head.strip(), rest
    v = Variant(spec=spec, target=target)
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if key.isdigit():
            if not value.isdigit():
                raise UsageError(f"--vary {spec!r}: dimension {key} needs a size, e.g. {key}=16")
            v.sizes[int(key)] = int(value)
        elif key == "dtype":
            name = value.removeprefix("torch.")
            if name not in _DTYPES:
                raise UsageError(f"--vary {spec!r}: unknown dtype {value!r}; one of {', '.join(_DTYPES[:6])}, ...")
            v.dtype = name
        elif key == "device":
            if not value:
                raise UsageError(f"--vary {spec!r}: device needs a value, e.g. device=cuda")
            v.device = value
        elif key == "requires_grad":
            if sep and value.lower() not in ("true", "false", "1", "0"):
                raise UsageError(f"--vary {spec!r}: requires_grad is true or false")
            v.requires_grad = (not sep) or value.lower() in ("true", "1")
        else:
            raise UsageError(f"--vary {spec!r}: unknown key {key!r}; the form is {FORMAT}")
    if not (v.sizes or v.dtype or v.device or v.requires_grad is not None):
        raise UsageError(f"--vary {spec!r}: nothing to change; the form is {FORMAT}")
    return v


def default_variants() -> list[Variant]:
    """Dim 0 doubled, then halved: the first recompiles under automatic dynamic shapes (expected),
    the second shows whether the dynamic graph is reused or a size-dependent branch recompiles."""
    return [Variant(spec="dim 0 x2", scale=2.0), Variant(spec="dim 0 /2", scale=0.5)]


def input_names(model: Any, inputs: tuple[Any, ...] | dict[str, Any]) -> list[str]:
    if isinstance(inputs, dict):
        return list(inputs)
    import inspect

    try:
        params = [p for p in inspect.signature(getattr(model, "forward", model)).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return [params[i].name if i < len(params) else f"#{i}" for i in range(len(inputs))]


def apply(v: Variant, model: Any, inputs: tuple[Any, ...] | dict[str, Any]) -> tuple[Any, list[str]]:
    """New inputs with the variant's changes, and what changed (``x: dim 0 4 -> 8``)."""
    import torch

    names = input_names(model, inputs)
    values = list(inputs.values()) if isinstance(inputs, dict) else list(inputs)
    if v.target is not None and v.target not in names and not (v.target.startswith("#") and
                                                                v.target[1:].isdigit() and int(v.target[1:]) < len(values)):
        raise UsageError(f"--vary {v.spec!r}: no input {v.target!r}; the inputs are {', '.join(names)}")
    changes: list[str] = []
    out = []
    for i, (name, t) in enumerate(zip(names, values, strict=True)):
        chosen = v.target is None or v.target in (name, f"#{i}")
        if not chosen or not isinstance(t, torch.Tensor):
            out.append(t)
            continue
        new = t
        sizes = dict(v.sizes)
        if v.scale is not None and t.dim() >= 1:
            n = t.shape[0]
            m = max(2, int(n * v.scale)) if v.scale >= 1 else max(2, n // 2)
            if m == n:
                m = n + 1
            sizes[0] = m
        sizes = {d: s for d, s in sizes.items() if d < t.dim()}
        if sizes:
            shape = [sizes.get(d, s) for d, s in enumerate(t.shape)]
            new = _resized_jagged(t, sizes, name, v.spec) if jagged(t) is not None else _resized(t, shape)
            changes += [f"{name}: dim {d} {t.shape[d]} -> {s}" for d, s in sorted(sizes.items()) if s != t.shape[d]]
        if v.dtype and (new.is_floating_point() or v.target is not None):
            dt = getattr(torch, v.dtype)
            if dt != new.dtype:
                changes.append(f"{name}: dtype {str(new.dtype).removeprefix('torch.')} -> {v.dtype}")
                new = new.to(dt)
        if v.device and torch.device(v.device) != new.device:
            changes.append(f"{name}: device {new.device} -> {v.device}")
            new = new.to(v.device)
        if v.requires_grad is not None and (new.is_floating_point() or new.is_complex()) and \
                new.requires_grad != v.requires_grad:
            changes.append(f"{name}: requires_grad {new.requires_grad} -> {v.requires_grad}")
            new = new.detach().requires_grad_(v.requires_grad)
        out.append(new)
    new_inputs = dict(zip(inputs, out, strict=True)) if isinstance(inputs, dict) else tuple(out)
    return new_inputs, changes


def _resized_jagged(t: Any, sizes: dict[int, int], name: str, spec: str) -> Any:
    """A jagged nested tensor of ``sizes[0]`` sequences, the old ones taken in turn: its other sizes
    (the ragged one among them) are its sequences' own, so no other dimension can be set."""
    import torch

    if set(sizes) != {0}:
        raise UsageError(f"--vary {spec!r}: {name} is a nested jagged tensor; only its dim 0 (how many "
                         f"sequences) can be varied, not dim {min(set(sizes) - {0})}")
    parts = t.detach().unbind()
    new = torch.nested.nested_tensor([parts[i % len(parts)] for i in range(sizes[0])], layout=torch.jagged)
    return new.requires_grad_(t.requires_grad)


def _resized(t: Any, shape: list[int]) -> Any:
    """A tensor of the new shape with values like the old one's (ints stay in range, bools stay bools)."""
    import torch

    idx = [torch.arange(s, device=t.device) % max(old, 1) for s, old in zip(shape, t.shape, strict=True)]
    if t.numel() == 0:
        return torch.zeros(shape, dtype=t.dtype, device=t.device)
    grid = torch.meshgrid(*idx, indexing="ij") if idx else ()
    new = t.detach()[grid] if idx else t.detach().clone()
    return new.contiguous().requires_grad_(t.requires_grad) if t.is_floating_point() else new.contiguous()
