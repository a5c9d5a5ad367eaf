"""How many programs a persistent Triton kernel launches (kdiff's metrics, aotiprint's stats).

A persistent kernel runs a few programs per SM, each striding over the tensor, never more programs
than there are blocks. Under Triton's interpreter (CPU tensors) a few programs are enough to
exercise the striding. The SM count is asked once per device: it is on every launch's path.
"""

from __future__ import annotations

import functools
from typing import Any

INTERPRETED_PROGRAMS = 8


@functools.cache
def _sms(index: int) -> int:
    import torch

    return torch.cuda.get_device_properties(index).multi_processor_count


def persistent_programs(device: Any, n: int, block: int, per_sm: int) -> int:
    """Programs for ``n`` elements in steps of ``block``: ``per_sm`` per SM on CUDA, at least one."""
    blocks = max(1, -(-n // block))
    if device.type == "cuda":
        import torch

        index = device.index if device.index is not None else torch.cuda.current_device()
        return min(blocks, _sms(index) * per_sm)
    return min(blocks, INTERPRETED_PROGRAMS)
