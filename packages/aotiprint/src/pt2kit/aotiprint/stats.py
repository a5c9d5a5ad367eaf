"""Statistics of one tensor, as a ``Stats`` record field: numel, mean, min, max, NaN and Inf counts.

mean/min/max are over the finite values, so one NaN does not hide the rest (the stock printer's
mean turns NaN); NaN and Inf are counted. Floating tensors on CUDA go through the one-pass Triton
kernel (:mod:`.triton_stats`); everything else through torch (:mod:`.torch_stats`), in bounded
chunks so that a huge tensor does not double the memory it uses.
"""

from __future__ import annotations

from typing import Any

from .torch_stats import finite_stats_torch


def triton_usable(t: Any) -> bool:
    """CUDA floating tensors of the kinds the kernel loads (fp32/fp16/bf16), when triton imports."""
    import torch

    if t.device.type != "cuda" or t.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        return False
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    return True


def tensor_stats(t: Any) -> dict[str, Any]:
    """Stats of ``t`` (any dtype, any device) in one pass where a kernel exists; of its magnitude for
    a complex tensor (the record's ``stats.of`` says so)."""
    if t.is_complex():
        t = t.abs()
    if triton_usable(t):
        from .triton_stats import stats

        return stats(t)
    return finite_stats_torch(t)
