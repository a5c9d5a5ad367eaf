"""Tensors in records and in the store. A tensor saved here is one plain tensor, so whoever reads it
back does so with ``torch.load(weights_only=True)``: nothing is ever unpickled.

A ``torch.nested`` jagged tensor (NJT) is described by its shape with the ragged dimension written as
torch prints it (``j1``), ``layout="jagged"`` and its offsets; compared, it is two leaves: its
``values()`` and, exactly, its ``offsets()`` (:func:`unjag`).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

from pt2kit.schema import BlobRef, Store, TensorMeta

TENSOR_MEDIA_TYPE = "application/x-pytorch"


def dim(x: Any) -> int | str:
    """A size or stride entry: an int, or the expression of a symbolic one (a nested int: ``j1``)."""
    try:
        return int(x)
    except (TypeError, ValueError, RuntimeError, AttributeError):  # a nested int has no int_()
        return str(x)


@dataclass
class Jagged:
    """A jagged nested tensor's parts: ``values`` (the ragged dimension folded into one), ``offsets``
    into it, and which dimension of the nested tensor is the ragged one."""

    values: Any
    offsets: Any
    ragged_dim: int
    lengths: Any = None  # set for a non-contiguous NJT (holes between components)


def jagged(x: Any) -> Jagged | None:
    """The parts of a ``torch.nested`` jagged tensor; None for anything else (a strided nested tensor
    included: it has no offsets). ``_ragged_idx`` is private (torch 2.4 to 2.13 keep it); where it is
    missing the ragged dimension is the one whose size is not an int."""
    import torch

    if not isinstance(x, torch.Tensor) or not x.is_nested or x.layout != torch.jagged:
        return None
    idx = getattr(x, "_ragged_idx", None)
    if not isinstance(idx, int):
        idx = next(i for i, s in enumerate(x.shape) if isinstance(dim(s), str))
    return Jagged(x.values(), x.offsets(), idx, x.lengths())


def nested_from(values: Any, offsets: Any, ragged_dim: int) -> Any:
    """The jagged nested tensor of ``values`` split at ``offsets`` (the inverse of :func:`jagged`)."""
    import torch

    return torch.nested.nested_tensor_from_jagged(values, offsets, jagged_dim=ragged_dim)


def unjag(leaves: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """Named leaves with each jagged tensor ``N`` as two: ``N`` its ``values()`` and ``N.offsets()``
    (an int tensor, so any comparison of it is exact)."""
    out: list[tuple[str, Any]] = []
    for name, v in leaves:
        j = jagged(v)
        out += [(name, v)] if j is None else [(name, j.values), (f"{name}.offsets()", j.offsets)]
    return out


def first_jagged(inputs: Any) -> str | None:
    """The name (``inputs[0]``, ``inputs['x']``) of the first jagged nested tensor among model inputs."""
    from ..worker.outputs import flatten

    return next((n for n, v in flatten(inputs, "inputs") if jagged(v) is not None), None)


def tensor_meta(name: str, value: Any) -> TensorMeta:
    import torch

    j = jagged(value)
    if j is not None:
        return TensorMeta(name=name, dtype=str(value.dtype).removeprefix("torch."),
                          shape=[dim(s) for s in value.shape], device=str(value.device), layout="jagged",
                          offsets=[int(o) for o in j.offsets.tolist()])
    if isinstance(value, torch.Tensor):
        stride = None
        if value.layout == torch.strided:
            stride = [dim(s) for s in value.stride()]
        return TensorMeta(
            name=name,
            dtype=str(value.dtype).removeprefix("torch."),
            shape=[dim(s) for s in value.shape],
            stride=stride,
            device=str(value.device),
        )
    return TensorMeta(name=name, type=type(value).__name__)


def save_tensor(store: Store, t: Any) -> BlobRef:
    import torch

    buf = io.BytesIO()
    torch.save(t.detach().cpu().contiguous().clone(), buf)
    return store.put(buf.getvalue(), TENSOR_MEDIA_TYPE, ".pt")
