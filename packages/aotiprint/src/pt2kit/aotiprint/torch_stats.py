"""Statistics of one tensor with torch alone, in bounded chunks: the path of every tensor the Triton
kernel (:mod:`.triton_stats`) does not take, and its fallback when float32 partial sums overflow.

mean/min/max are over the finite values; NaN and Inf are counted. Each chunk is widened to float32
(float64 stays float64) on its own, so a huge tensor does not double the memory it uses. A leaf: it
imports no other module of aotiprint.
"""

from __future__ import annotations

import math
from typing import Any

CHUNK = 1 << 24  # elements per chunk, for sums past float32's range


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
