"""Statistics of one tensor, as a ``Stats`` record field: numel, mean, min, max, NaN and Inf counts.

mean/min/max are over the finite values, so one NaN does not hide the rest (the stock printer's
mean turns NaN); NaN and Inf are counted. Floating tensors on CUDA go through the one-pass Triton
kernel (:mod:`.triton_stats`); everything else through torch, in bounded chunks so that a huge
tensor does not double the memory it uses.
"""

from __future__ import annotations

import math
from typing import Any

CHUNK = 1 << 24


def finite_stats_torch(x: Any, chunk: int = CHUNK) -> dict[str, Any]:
    import torch

    flat = x.detach().reshape(-1)
    n = flat.numel()
    total = 0.0
    lo, hi = math.inf, -math.inf
    nan = inf = finite = 0
    for start in range(0, n, chunk):
        part = flat[start:start + chunk]
        if part.dtype == torch.bool:
            part = part.to(torch.uint8)
        if part.is_floating_point() or part.is_complex():
            part = part.to(torch.float64) if part.dtype == torch.float64 else part.float()
            is_nan = torch.isnan(part)
            is_inf = torch.isinf(part)
            ok = ~(is_nan | is_inf)
            c_nan, c_inf, c_ok = torch.stack([is_nan.sum(), is_inf.sum(), ok.sum()]).tolist()
            nan += int(c_nan)
            inf += int(c_inf)
            finite += int(c_ok)
            if c_ok:
                vals = part[ok] if c_ok != part.numel() else part
                s, a, b = torch.stack([vals.sum(dtype=torch.float64), vals.min().double(), vals.max().double()]).tolist()
                total += s
                lo, hi = min(lo, a), max(hi, b)
        else:
            s, a, b = torch.stack([part.sum(dtype=torch.float64), part.min().double(), part.max().double()]).tolist()
            total += s
            finite += part.numel()
            lo, hi = min(lo, a), max(hi, b)
    if not finite:
        return {"numel": n, "mean": None, "min": None, "max": None, "nan": nan, "inf": inf}
    return {"numel": n, "mean": total / finite, "min": lo, "max": hi, "nan": nan, "inf": inf}


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
