"""The single-pass Triton kernel behind :func:`.metrics.compare` on CUDA.

A persistent kernel: a few programs per SM stride over the tensors (the loop's loads pipelined),
reading each element of both once and folding it into per-lane accumulators held in registers:
sums of |d| and d², max relative error, the count of mismatches, the furthest mismatch past its
tolerance and the largest |d| with their indices. Each program reduces its lanes once, at the end,
into one row, with both values at its two indices; a one-program kernel folds the rows, and the host
copies a dozen numbers back once (torch reductions over the rows and a second read of the worst
element would cost a launch and a sync each: a tenth of the time at 1 GiB). Every instruction per
element counts (the loop with only a sum in it runs at the copy ceiling), so non-finite values are
not counted in the loop: a NaN or Inf makes the sums non-finite, and only then (rare, and then speed
is not the question) do a few more passes count them per side and sum |d| without the NaNs.
Accumulates in float32 for 16/32-bit inputs and in float64 for float64. Tested on CPU with
``TRITON_INTERPRET=1``.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import triton
import triton.language as tl

from pt2kit.runtime.shims.tritoncompat import patch_interpreter_index
from pt2kit.runtime.worker.kernelgrid import persistent_programs

from .dtypes import compute_dtype

patch_interpreter_index()

# The best of a sweep on an H200 (benchmarks/bench_kdiff.py, 2026-11-22): 0.58 ms for 2 x 1 GiB, kernel
# and fold; the same loop with only a sum in it takes 0.52-0.54 ms.
BLOCK = 1024  # elements per program per step
NUM_WARPS = 4
PROGRAMS_PER_SM = 12
NUM_STAGES = 3  # loads of later steps in flight while this one computes
NCOLS = 12  # max_abs, sum_abs, sum_sq, max_rel, mism, ex_ref, ex_test, d_ref, d_test, excess, ex_idx, d_idx
EVICT = "evict_first"  # each element is read once: keep it out of L2's way
CHUNK = 1 << 24  # elements per chunk of the rare non-finite path


@triton.jit
def _fold(a, b, atol, rtol, EQUAL_NAN: tl.constexpr):
    """Per element: (|d|, relative error, mismatch, excess past tolerance)."""
    inf = float("inf")
    aa = tl.abs(a)
    diff = tl.abs(a - b)
    # isclose: equal (infinities too), or within atol + rtol*|ref| with a finite reference; a NaN
    # or infinite test value then fails the comparison by itself
    close = (a == b) | ((diff <= atol + rtol * aa) & (aa < inf))
    if EQUAL_NAN:
        close = close | ((a != a) & (b != b))
    # a metric, not a verdict: the approximate division (2 ulp) is plenty and much cheaper than IEEE.
    # d/0 is inf; 0/0 and NaN are NaN, which the running maximum (maxnum) of rel ignores
    rel = tl.fdiv(diff, aa, ieee_rounding=False)
    excess = tl.where(close, -inf, tl.where(diff < inf, diff - (atol + rtol * aa), inf))
    # |d| goes into the sums as it is: a NaN or Inf anywhere makes them non-finite, which is how the
    # host learns that non-finite values exist (then it recounts them, and the sums without them)
    return diff, rel, close, excess
@triton.jit
def _partials_kernel(ref_ptr, test_ptr, out_ptr, n, full_steps, atol, rtol,
                     EQUAL_NAN: tl.constexpr, F64: tl.constexpr, BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr,
                     EVICT: tl.constexpr, NCOLS: tl.constexpr):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    lanes = tl.arange(0, BLOCK)
    if F64:
        zero = tl.zeros([BLOCK], dtype=tl.float64)
    else:
        zero = tl.zeros([BLOCK], dtype=tl.float32)
    acc_sum = zero
    acc_sq = zero
    acc_rel = zero
    best_ex = zero - float("inf")
    best_d = zero - 1.0
    # where each lane's best was seen, as a step number: offset = first + step * stride + lane
    ex_step = tl.zeros([BLOCK], dtype=tl.int32)
    d_step = tl.zeros([BLOCK], dtype=tl.int32)
    c_mism = tl.zeros([BLOCK], dtype=tl.int32)
    stride = nprog.to(tl.int64) * BLOCK
    first = pid.to(tl.int64) * BLOCK
    # full steps: every program's block lies inside the tensor, so nothing is masked
    for it in tl.range(0, full_steps, num_stages=NUM_STAGES):
        offs = first + it * stride + lanes
        a = tl.load(ref_ptr + offs, eviction_policy=EVICT).to(zero.dtype)
        b = tl.load(test_ptr + offs, eviction_policy=EVICT).to(zero.dtype)
        d, rel, close, excess = _fold(a, b, atol, rtol, EQUAL_NAN)
        acc_sum += d
        acc_sq += d * d
        acc_rel = tl.maximum(acc_rel, rel)
        c_mism += (close == 0).to(tl.int32)
        better = excess > best_ex
        best_ex = tl.where(better, excess, best_ex)
        ex_step = tl.where(better, it, ex_step)
        better_d = d > best_d
        best_d = tl.where(better_d, d, best_d)
        d_step = tl.where(better_d, it, d_step)
    # the tail: one masked step
    offs = first + full_steps * stride + lanes
    mask = offs < n
    a = tl.load(ref_ptr + offs, mask=mask, other=0.0).to(zero.dtype)
    b = tl.load(test_ptr + offs, mask=mask, other=0.0).to(zero.dtype)
    d, rel, close, excess = _fold(a, b, atol, rtol, EQUAL_NAN)
    acc_sum += d  # masked lanes load 0 on both sides: d is 0
    acc_sq += d * d
    acc_rel = tl.maximum(acc_rel, rel)
    c_mism += ((close == 0) & mask).to(tl.int32)
    excess = tl.where(mask, excess, -float("inf"))
    better = excess > best_ex
    best_ex = tl.where(better, excess, best_ex)
    ex_step = tl.where(better, full_steps, ex_step)
    better_d = mask & (d > best_d)
    best_d = tl.where(better_d, d, best_d)
    d_step = tl.where(better_d, full_steps, d_step)

    ex_max, ex_lane = tl.max(best_ex, axis=0, return_indices=True)
    d_max, d_lane = tl.max(best_d, axis=0, return_indices=True)
    row = out_ptr + NCOLS + pid.to(tl.int64) * NCOLS
    tl.store(row + 1, tl.sum(acc_sum.to(tl.float64), axis=0))
    tl.store(row + 2, tl.sum(acc_sq.to(tl.float64), axis=0))
    tl.store(row + 3, tl.max(acc_rel, axis=0).to(tl.float64))
    tl.store(row + 4, tl.sum(c_mism, axis=0).to(tl.float64))
    tl.store(row + 9, ex_max.to(tl.float64))
    ex_it = tl.sum(tl.where(lanes == ex_lane, ex_step, 0), axis=0).to(tl.int64)
    d_it = tl.sum(tl.where(lanes == d_lane, d_step, 0), axis=0).to(tl.int64)
    ex_at = first + ex_it * stride + ex_lane
    d_at = first + d_it * stride + d_lane
    # both values at both indices, as the inputs hold them (a program that saw no element reads
    # element 0, and nothing at all from an empty tensor; the fold never picks its row)
    ex_at = tl.where(ex_at < n, ex_at, 0)
    tl.store(row + 5, tl.load(ref_ptr + ex_at, mask=n > 0, other=0).to(tl.float64))
    tl.store(row + 6, tl.load(test_ptr + ex_at, mask=n > 0, other=0).to(tl.float64))
    tl.store(row + 10, ex_at.to(tl.float64))
    seen = d_max >= 0  # -1: every element this program saw had a NaN difference, or it saw none
    d_at = tl.where(seen & (d_at < n), d_at, 0)
    tl.store(row + 7, tl.load(ref_ptr + d_at, mask=n > 0, other=0).to(tl.float64))
    tl.store(row + 8, tl.load(test_ptr + d_at, mask=n > 0, other=0).to(tl.float64))
    tl.store(row + 11, tl.where(seen, d_at, -1).to(tl.float64))
    tl.store(row + 0, tl.maximum(d_max, 0.0).to(tl.float64))


@triton.jit
def _fold_rows_kernel(out_ptr, rows, NCOLS: tl.constexpr, ROWS: tl.constexpr):
    """Rows into the buffer's first NCOLS slots: the sums, maxima, and the worst rows' indices and values."""
    r = tl.arange(0, ROWS)
    ok = r < rows
    row = out_ptr + NCOLS + r * NCOLS
    d_max, d_row = tl.max(tl.load(row + 0, mask=ok, other=-1.0), axis=0, return_indices=True)
    ex_max, ex_row = tl.max(tl.load(row + 9, mask=ok, other=-float("inf")), axis=0, return_indices=True)
    tl.store(out_ptr + 0, d_max)
    tl.store(out_ptr + 1, tl.sum(tl.load(row + 1, mask=ok, other=0.0), axis=0))
    tl.store(out_ptr + 2, tl.sum(tl.load(row + 2, mask=ok, other=0.0), axis=0))
    tl.store(out_ptr + 3, tl.max(tl.load(row + 3, mask=ok, other=0.0), axis=0))
    tl.store(out_ptr + 4, tl.sum(tl.load(row + 4, mask=ok, other=0.0), axis=0))
    ex = out_ptr + NCOLS + ex_row.to(tl.int64) * NCOLS
    d = out_ptr + NCOLS + d_row.to(tl.int64) * NCOLS
    tl.store(out_ptr + 5, tl.load(ex + 5))
    tl.store(out_ptr + 6, tl.load(ex + 6))
    tl.store(out_ptr + 7, tl.load(d + 7))
    tl.store(out_ptr + 8, tl.load(d + 8))
    tl.store(out_ptr + 9, ex_max)
    tl.store(out_ptr + 10, tl.load(ex + 10))
    tl.store(out_ptr + 11, tl.load(d + 11))


def _sums_without_nan(a: torch.Tensor, b: torch.Tensor, f64: bool) -> tuple[float, float]:
    dtype = torch.float64 if f64 else torch.float32
    s_abs = torch.zeros((), dtype=torch.float64, device=a.device)
    s_sq = torch.zeros((), dtype=torch.float64, device=a.device)
    fa, fb = a.reshape(-1), b.reshape(-1)
    for start in range(0, fa.numel(), CHUNK):
        d = (fa[start:start + CHUNK].to(dtype) - fb[start:start + CHUNK].to(dtype)).abs()
        d = d.nan_to_num(nan=0.0, posinf=math.inf)
        s_abs += d.sum(dtype=torch.float64)
        s_sq += (d * d).sum(dtype=torch.float64)
    return float(s_abs), float(s_sq)


def partials(a: torch.Tensor, b: torch.Tensor, *, atol: float, rtol: float, equal_nan: bool) -> dict[str, Any]:
    """The reductions :func:`.metrics._finish` needs, from one pass of the kernel over ``a`` and ``b``."""
    f64 = compute_dtype(a, b) == torch.float64
    a = a.contiguous()
    b = b.contiguous()
    n = a.numel()
    grid = persistent_programs(a.device, n, BLOCK, PROGRAMS_PER_SM)
    out = torch.empty(NCOLS * (grid + 1), dtype=torch.float64, device=a.device)
    full_steps = n // (grid * BLOCK)
    _partials_kernel[(grid,)](a, b, out, n, full_steps, float(atol), float(rtol), EQUAL_NAN=bool(equal_nan), F64=f64,
                              BLOCK=BLOCK, NUM_STAGES=NUM_STAGES, EVICT=EVICT, NCOLS=NCOLS, num_warps=NUM_WARPS)
    _fold_rows_kernel[(1,)](out, grid, NCOLS=NCOLS, ROWS=max(16, triton.next_power_of_2(grid)), num_warps=4)
    # indices are below 2**53, so float64 carries them exactly
    summary = out[:NCOLS].tolist()
    mism = int(summary[4])
    counts = [0, 0, 0, 0]
    if not (math.isfinite(summary[1]) and math.isfinite(summary[2])):
        # rare: NaN or Inf somewhere (or sums past float range): count them exactly, and sum |d|
        # without the NaNs, in a few more passes over bounded chunks
        counts = torch.stack([torch.isnan(a).sum(), torch.isnan(b).sum(), torch.isinf(a).sum(),
                              torch.isinf(b).sum()]).tolist()
        summary[1], summary[2] = _sums_without_nan(a, b, f64)
    return {
        "max_abs": summary[0], "sum_abs": summary[1], "sum_sq": summary[2], "max_rel": summary[3], "mism": mism,
        "nan_a": int(counts[0]), "nan_b": int(counts[1]), "inf_a": int(counts[2]), "inf_b": int(counts[3]),
        "excess": summary[9] if mism else -math.inf,
        "excess_at": int(summary[10]) if mism else None,
        "maxd_at": int(summary[11]) if n and summary[11] >= 0 else None,
        # the worst element's values, read by the kernel: no second trip to the device
        "worst_values": (summary[5], summary[6]) if mism else (summary[7], summary[8]),
    }
