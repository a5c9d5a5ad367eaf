"""memory: no single materialised tensor is larger than the hardware can hold.

Why: on-chip memories and DMA descriptors cap what one tensor may occupy. Only tensors that exist
in memory count: forward graph inputs (parameters too) and the outputs of compute ops (a backward
graph's inputs were counted where the forward made them). Views (``aten.t``,
``aten.view``, slices) share their base's memory and are never counted. With symbolic sizes the
example sizes give the estimate, and the message says so.

Example: ``max_tensor_bytes = 1048576`` and a ``torch.randn(1024, 1024)`` input gives
``input l_x_: 4.0 MiB (4194304 bytes) > limit 1.0 MiB``.
"""

from __future__ import annotations

from collections.abc import Iterator

from pt2kit.schema import Profile

from ..graphview import GraphView, TensorInfo
from .base import Constraint, Finding, describe, materialised, node_label

_ITEMSIZE = {"float64": 8, "int64": 8, "complex64": 8, "complex128": 16, "float32": 4, "int32": 4, "uint32": 4,
             "float16": 2, "bfloat16": 2, "int16": 2, "uint16": 2}


def human(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def _estimate(t: TensorInfo) -> int | None:
    if any(h is None for h in t.hints):
        return None
    numel = 1
    for h in t.hints:
        numel *= int(h or 0)
    return numel * _ITEMSIZE.get(t.dtype, 1)


class MemoryConstraint(Constraint):
    name = "memory"

    def enabled(self, profile: Profile) -> bool:
        return profile.max_tensor_bytes is not None

    def check(self, graph: GraphView, profile: Profile) -> Iterator[Finding]:
        limit = int(profile.max_tensor_bytes or 0)
        for node, t in materialised(graph):
            size, note = t.nbytes, ""
            if size is None:
                size, note = _estimate(t), " (with the example sizes)"
            if size is not None and size > limit:
                yield Finding(
                    self.name,
                    f"{node_label(node)}: {describe(t)} takes {human(size)} ({size} bytes){note} > limit "
                    f"{human(limit)}",
                    node,
                    t,
                )


MEMORY = MemoryConstraint()
