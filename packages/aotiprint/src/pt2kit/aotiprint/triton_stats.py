"""One-pass tensor statistics on the GPU: a Triton kernel (CPU-tested with ``TRITON_INTERPRET=1``).

Each program strides over the tensor keeping, per lane, a running sum, min and max; nothing else is
done per element. NaN and Inf cost nothing on the common path: any NaN or Inf makes the sum (or min
or max) non-finite, which is how the host learns that some exist; only then does a second pass of
the same kernel, compiled to count them, take the sum, min and max of the finite values.

The per-program rows are folded by a second, one-program kernel, so the host waits once and copies
three numbers: torch reductions over the rows would cost a launch and a few microseconds each, which
at 1 GiB is a tenth of the time.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import triton
import triton.language as tl

from pt2kit.runtime.shims.tritoncompat import patch_interpreter_index
from pt2kit.runtime.worker.kernelgrid import persistent_programs

from .torch_stats import CHUNK, finite_stats_torch

patch_interpreter_index()

# best of the sweep in benchmarks/bench_aotiprint.py on an H200 (2026-11-22): 0.27 ms of GPU time for 1 GiB
BLOCK = 2048  # elements per program per step
NUM_WARPS = 8
PROGRAMS_PER_SM = 4
NUM_STAGES = 5
EVICT = "evict_first"  # each element is read once: keep it out of L2's way
NCOLS = 5  # sum, min, max, nan, inf per program (the counts only on the counting pass)


@triton.jit
def _fold(acc, lo, hi, c_nan, c_inf, x, COUNT: tl.constexpr):
    if COUNT:
        nan = x != x
        inf = tl.abs(x) == float("inf")
        finite = (nan | inf) == 0
        c_nan += nan.to(tl.int32)
        c_inf += inf.to(tl.int32)
        acc += tl.where(finite, x, 0.0)
        lo = tl.minimum(lo, tl.where(finite, x, float("inf")))
        hi = tl.maximum(hi, tl.where(finite, x, -float("inf")))
    else:
        acc += x
        lo = tl.minimum(lo, x)
        hi = tl.maximum(hi, x)
    return acc, lo, hi, c_nan, c_inf


@triton.jit
def _stats_kernel(x_ptr, out_ptr, n, full_steps, BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr,
                  EVICT: tl.constexpr, COUNT: tl.constexpr, NCOLS: tl.constexpr):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    lanes = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    lo = tl.zeros([BLOCK], dtype=tl.float32) + float("inf")
    hi = tl.zeros([BLOCK], dtype=tl.float32) - float("inf")
    c_nan = tl.zeros([BLOCK], dtype=tl.int32)
    c_inf = tl.zeros([BLOCK], dtype=tl.int32)
    stride = nprog.to(tl.int64) * BLOCK
    first = pid.to(tl.int64) * BLOCK
    for it in tl.range(0, full_steps, num_stages=NUM_STAGES):
        x = tl.load(x_ptr + first + it * stride + lanes, eviction_policy=EVICT).to(tl.float32)
        acc, lo, hi, c_nan, c_inf = _fold(acc, lo, hi, c_nan, c_inf, x, COUNT)
    offs = first + full_steps * stride + lanes
    mask = offs < n
    # masked lanes load 0: nothing to the sum or the counts; min and max must not see them
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    t_acc, t_lo, t_hi, c_nan, c_inf = _fold(acc, lo, hi, c_nan, c_inf, x, COUNT)
    acc = t_acc
    lo = tl.where(mask, t_lo, lo)
    hi = tl.where(mask, t_hi, hi)
    row = out_ptr + NCOLS + pid.to(tl.int64) * NCOLS
    tl.store(row + 0, tl.sum(acc.to(tl.float64), axis=0))
    tl.store(row + 1, tl.min(lo, axis=0).to(tl.float64))
    tl.store(row + 2, tl.max(hi, axis=0).to(tl.float64))
    if COUNT:
        tl.store(row + 3, tl.sum(c_nan.to(tl.int64), axis=0).to(tl.float64))
        tl.store(row + 4, tl.sum(c_inf.to(tl.int64), axis=0).to(tl.float64))


@triton.jit
def _fold_rows_kernel(out_ptr, rows, ROWS: tl.constexpr, COUNT: tl.constexpr, NCOLS: tl.constexpr):
    r = tl.arange(0, ROWS)
    ok = r < rows
    row = out_ptr + NCOLS + r * NCOLS
    tl.store(out_ptr + 0, tl.sum(tl.load(row + 0, mask=ok, other=0.0), axis=0))
    tl.store(out_ptr + 1, tl.min(tl.load(row + 1, mask=ok, other=float("inf")), axis=0))
    tl.store(out_ptr + 2, tl.max(tl.load(row + 2, mask=ok, other=-float("inf")), axis=0))
    if COUNT:
        tl.store(out_ptr + 3, tl.sum(tl.load(row + 3, mask=ok, other=0.0), axis=0))
        tl.store(out_ptr + 4, tl.sum(tl.load(row + 4, mask=ok, other=0.0), axis=0))


def _pass(x: torch.Tensor, count: bool) -> list[float]:
    """(sum, min, max[, nan, inf]) of one pass: the totals at the buffer's start, the rows after them."""
    n = x.numel()
    grid = persistent_programs(x.device, n, BLOCK, PROGRAMS_PER_SM)
    out = torch.empty(NCOLS * (grid + 1), dtype=torch.float64, device=x.device)
    _stats_kernel[(grid,)](x, out, n, n // (grid * BLOCK), BLOCK=BLOCK, NUM_STAGES=NUM_STAGES, EVICT=EVICT,
                           COUNT=count, NCOLS=NCOLS, num_warps=NUM_WARPS)
    _fold_rows_kernel[(1,)](out, grid, ROWS=max(16, triton.next_power_of_2(grid)), COUNT=count, NCOLS=NCOLS,
                            num_warps=4)
    return out[:5 if count else 3].tolist()


def stats(t: torch.Tensor) -> dict[str, Any]:
    """numel, mean/min/max of the finite values, and NaN/Inf counts of a floating tensor."""
    # the kernel reads the storage as one flat run; every microsecond before the launch is on the clock
    x = t if t.is_contiguous() else t.contiguous()
    n = x.numel()
    if n == 0:
        return {"numel": 0, "mean": None, "min": None, "max": None, "nan": 0, "inf": 0}
    total, lo, hi = _pass(x, count=False)
    if math.isfinite(total) and math.isfinite(lo) and math.isfinite(hi):
        return {"numel": n, "mean": total / n, "min": lo, "max": hi, "nan": 0, "inf": 0}
    # some NaN or Inf (the usual case once a model has gone bad): a second pass counts them
    total, lo, hi, nan, inf = _pass(x, count=True)
    finite = n - int(nan) - int(inf)
    if not math.isfinite(total):  # finite values whose float32 partial sums overflow: float64 chunks
        return finite_stats_torch(x, chunk=CHUNK)
    if not finite:
        return {"numel": n, "mean": None, "min": None, "max": None, "nan": int(nan), "inf": int(inf)}
    return {"numel": n, "mean": total / finite, "min": lo, "max": hi, "nan": int(nan), "inf": int(inf)}
