"""Tensors in records and in the store. Tensors are read back with ``weights_only=True`` only."""

from __future__ import annotations

import io
from typing import Any

from pt2kit.schema import BlobRef, Store, TensorMeta

TENSOR_MEDIA_TYPE = "application/x-pytorch"


def dim(x: Any) -> int | str:
    """A size or stride entry: an int, or the expression of a symbolic one."""
    try:
        return int(x)
    except (TypeError, ValueError, RuntimeError):
        return str(x)


def tensor_meta(name: str, value: Any) -> TensorMeta:
    import torch

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


def load_tensor(store: Store, ref: BlobRef) -> Any:
    import torch

    return torch.load(io.BytesIO(store.read(ref)), weights_only=True)
