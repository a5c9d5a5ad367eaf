"""One-pass tensor statistics on the GPU: a Triton kernel (CPU-tested with ``TRITON_INTERPRET=1``).

Each program strides over the tensor keeping, per lane, a running sum, min and max; nothing else is
done per element. NaN and Inf cost nothing on the common path: ``minimum``/``maximum`` skip NaN,
and any NaN or Inf makes the sum non-finite, which is how the host learns that some exist; only then
do a few chunked torch passes count them and take the sum, min and max of the finite values.

The per-program rows are folded by a second, one-program kernel, so the host waits once and copies
three numbers: torch reductions over the rows would cost a launch and a few microseconds each, which
at 1 GiB is a tenth of the time.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import torch
import triton
import triton.language as tl

from pt2kit.runtime.tritoncompat import patch_interpreter_index

from .stats import finite_stats_torch

patch_interpreter_index()

# best of the sweep in benchmarks/bench_aotiprint.py on an H200 (2026-11-22): 0.27 ms of GPU time for 1 GiB
BLOCK = 2048  # elements per program per step
NUM_WARPS = 8
PROGRAMS_PER_SM = 4
NUM_STAGES = 5
EVICT = "evict_first"  # each element is read once: keep it out of L2's way
CHUNK = 1 << 24  # elements per chunk of the rare non-finite path


@triton.jit
def _stats_kernel(x_ptr, out_ptr, n, full_steps, BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr,
                  EVICT: tl.constexpr):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    lanes = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    lo = tl.zeros([BLOCK], dtype=tl.float32) + float("inf")
    hi = tl.zeros([BLOCK], dtype=tl.float32) - float("inf")
    stride = nprog.to(tl.int64) * BLOCK
    first = pid.to(tl.int64) * BLOCK
    for it in tl.range(0, full_steps, num_stages=NUM_STAGES):
        x = tl.load(x_ptr + first + it * stride + lanes, eviction_policy=EVICT).to(tl.float32)
        acc += x
        lo = tl.minimum(lo, x)
        hi = tl.maximum(hi, x)
    offs = first + full_steps * stride + lanes
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    acc += x
    lo = tl.minimum(lo, tl.where(mask, x, float("inf")))
    hi = tl.maximum(hi, tl.where(mask, x, -float("inf")))
    # rows of (sum, min, max), after the three totals at the buffer's start
    row = out_ptr + 3 + pid.to(tl.int64) * 3
    tl.store(row + 0, tl.sum(acc.to(tl.float64), axis=0))
    tl.store(row + 1, tl.min(lo, axis=0).to(tl.float64))
    tl.store(row + 2, tl.max(hi, axis=0).to(tl.float64))


@triton.jit
def _fold_rows_kernel(out_ptr, rows, ROWS: tl.constexpr):
    r = tl.arange(0, ROWS)
    ok = r < rows
    row = out_ptr + 3 + r * 3
    tl.store(out_ptr + 0, tl.sum(tl.load(row + 0, mask=ok, other=0.0), axis=0))
    tl.store(out_ptr + 1, tl.min(tl.load(row + 1, mask=ok, other=float("inf")), axis=0))
    tl.store(out_ptr + 2, tl.max(tl.load(row + 2, mask=ok, other=-float("inf")), axis=0))


@functools.cache
def _sms(index: int | None) -> int:
    return torch.cuda.get_device_properties(index).multi_processor_count


def _programs(device: torch.device, n: int) -> int:
    blocks = max(1, triton.cdiv(n, BLOCK))
    if device.type == "cuda":
        return min(blocks, _sms(device.index) * PROGRAMS_PER_SM)
    return min(blocks, 8)  # the interpreter: a few programs exercise the striding


def stats(t: torch.Tensor) -> dict[str, Any]:
    """numel, mean/min/max of the finite values, and NaN/Inf counts of a floating tensor."""
    # the kernel reads the storage as one flat run; every microsecond before the launch is on the clock
    x = t if t.is_contiguous() else t.contiguous()
    n = x.numel()
    if n == 0:
        return {"numel": 0, "mean": None, "min": None, "max": None, "nan": 0, "inf": 0}
    grid = _programs(x.device, n)
    out = torch.empty(3 + 3 * grid, dtype=torch.float64, device=x.device)
    full_steps = n // (grid * BLOCK)
    _stats_kernel[(grid,)](x, out, n, full_steps, BLOCK=BLOCK, NUM_STAGES=NUM_STAGES, EVICT=EVICT,
                           num_warps=NUM_WARPS)
    _fold_rows_kernel[(1,)](out, grid, ROWS=max(16, triton.next_power_of_2(grid)), num_warps=4)
    total, lo, hi = out[:3].tolist()
    if not (math.isfinite(total) and math.isfinite(lo) and math.isfinite(hi)):
        return finite_stats_torch(x, chunk=CHUNK)  # rare: NaN or Inf somewhere
    return {"numel": n, "mean": total / n, "min": lo, "max": hi, "nan": 0, "inf": 0}
