"""One-pass tensor statistics on the GPU: a Triton kernel (CPU-tested with ``TRITON_INTERPRET=1``).

Each program strides over the tensor keeping, per lane, a running sum, min and max; nothing else is
done per element. NaN and Inf cost nothing on the common path: ``minimum``/``maximum`` skip NaN,
and any NaN or Inf makes the sum non-finite, which is how the host learns that some exist; only then
do a few chunked torch passes count them and take the sum, min and max of the finite values.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import triton
import triton.language as tl

BLOCK = 2048  # elements per program per step (best of the sweep in benchmarks/bench_aotiprint.py, H200)
NUM_WARPS = 8
PROGRAMS_PER_SM = 8
NUM_STAGES = 3
CHUNK = 1 << 24  # elements per chunk of the rare non-finite path


@triton.jit
def _stats_kernel(x_ptr, out_ptr, n, full_steps, BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    lanes = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    lo = tl.zeros([BLOCK], dtype=tl.float32) + float("inf")
    hi = tl.zeros([BLOCK], dtype=tl.float32) - float("inf")
    stride = nprog.to(tl.int64) * BLOCK
    first = pid.to(tl.int64) * BLOCK
    for it in tl.range(0, full_steps, num_stages=NUM_STAGES):
        x = tl.load(x_ptr + first + it * stride + lanes).to(tl.float32)
        acc += x
        lo = tl.minimum(lo, x)
        hi = tl.maximum(hi, x)
    offs = first + full_steps * stride + lanes
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    acc += x
    lo = tl.minimum(lo, tl.where(mask, x, float("inf")))
    hi = tl.maximum(hi, tl.where(mask, x, -float("inf")))
    row = out_ptr + pid.to(tl.int64) * 3
    tl.store(row + 0, tl.sum(acc.to(tl.float64), axis=0))
    tl.store(row + 1, tl.min(lo, axis=0).to(tl.float64))
    tl.store(row + 2, tl.max(hi, axis=0).to(tl.float64))


def _programs(device: torch.device, n: int) -> int:
    blocks = max(1, triton.cdiv(n, BLOCK))
    if device.type == "cuda":
        sms = torch.cuda.get_device_properties(device).multi_processor_count
        return min(blocks, sms * PROGRAMS_PER_SM)
    return min(blocks, 8)  # the interpreter: a few programs exercise the striding


def stats(t: torch.Tensor) -> dict[str, Any]:
    """numel, mean/min/max of the finite values, and NaN/Inf counts of a floating tensor."""
    from .stats import finite_stats_torch

    x = t.detach().reshape(-1)
    if not x.is_contiguous():
        x = x.contiguous()
    n = x.numel()
    if n == 0:
        return {"numel": 0, "mean": None, "min": None, "max": None, "nan": 0, "inf": 0}
    grid = _programs(x.device, n)
    out = torch.empty((grid, 3), dtype=torch.float64, device=x.device)
    full_steps = n // (grid * BLOCK)
    _stats_kernel[(grid,)](x, out, n, full_steps, BLOCK=BLOCK, NUM_STAGES=NUM_STAGES, num_warps=NUM_WARPS)
    total, lo, hi = torch.stack([out[:, 0].sum(), out[:, 1].min(), out[:, 2].max()]).tolist()
    if not (math.isfinite(total) and math.isfinite(lo) and math.isfinite(hi)):
        return finite_stats_torch(x, chunk=CHUNK)  # rare: NaN or Inf somewhere
    return {"numel": n, "mean": total / n, "min": lo, "max": hi, "nan": 0, "inf": 0}
