"""kdiff's metrics on two 1 GiB float32 tensors on the GPU: the one-pass Triton kernel against
naive torch metrics and against torch.testing.assert_close (a bare verdict), in one run.

Goal (issue 4, H200): <= 0.7 ms with every metric, >= 15x naive, >= 8x assert_close. Also prints
the copy ceiling (a device-to-device copy of one tensor, which reads 1 GiB and writes 1 GiB, the
same traffic as reading both). CUDA events, median of 20 after warm-up. Needs CUDA; says so
otherwise. Run: `python benchmarks/bench_kdiff.py` on the GPU machine.
"""

from __future__ import annotations

import importlib.util
import sys

import torch

if not torch.cuda.is_available() or importlib.util.find_spec("triton") is None:
    # say so and skip, before anything imports triton (absent from a CPU box's bench session)
    print("bench_kdiff: needs CUDA and triton (run it on the GPU machine); skipped")
    sys.exit(0)

import triton
import triton.language as tl
from cudatime import timed

from pt2kit.kdiff import triton_metrics
from pt2kit.kdiff.metrics import compare

N = (1 << 30) // 4  # 1 GiB of float32
ATOL, RTOL = 1e-5, 1.3e-6


@triton.jit
def _sum_only(a_ptr, b_ptr, out_ptr, full_steps, BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr):
    """Diagnostic: kdiff's persistent loop with nothing but sum |a - b| in it."""
    pid = tl.program_id(0)
    lanes = tl.arange(0, BLOCK)
    stride = tl.num_programs(0).to(tl.int64) * BLOCK
    first = pid.to(tl.int64) * BLOCK
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for it in tl.range(0, full_steps, num_stages=NUM_STAGES):
        offs = first + it * stride + lanes
        acc += tl.abs(tl.load(a_ptr + offs) - tl.load(b_ptr + offs))
    tl.store(out_ptr + pid, tl.sum(acc, axis=0))


def sum_only(a: torch.Tensor, b: torch.Tensor) -> float:
    block, per_sm, stages = triton_metrics.BLOCK, triton_metrics.PROGRAMS_PER_SM, triton_metrics.NUM_STAGES
    grid = torch.cuda.get_device_properties(a.device).multi_processor_count * per_sm
    out = torch.empty(grid, device=a.device)
    _sum_only[(grid,)](a, b, out, a.numel() // (grid * block), BLOCK=block, NUM_STAGES=stages,
                       num_warps=triton_metrics.NUM_WARPS)
    return out.sum().item()


def naive(a: torch.Tensor, b: torch.Tensor) -> dict:
    """What a hand-written harness does: one pass per metric, an .item() sync each."""
    d = (a - b).abs()
    return {
        "max_abs": d.max().item(), "mean_abs": d.mean().item(),
        "max_rel": (d / b.abs().clamp_min(1e-12)).max().item(), "rmse": d.pow(2).mean().sqrt().item(),
        "mismatches": (~torch.isclose(b, a, rtol=RTOL, atol=ATOL)).sum().item(),
        "nan": (torch.isnan(a).sum().item(), torch.isnan(b).sum().item()),
        "inf": (torch.isinf(a).sum().item(), torch.isinf(b).sum().item()),
        "worst": d.argmax().item(),
    }


def assert_close(a: torch.Tensor, b: torch.Tensor) -> None:
    try:
        torch.testing.assert_close(b, a, rtol=RTOL, atol=ATOL)
    except AssertionError:
        pass


def main() -> None:
    if not torch.cuda.is_available():
        print("bench_kdiff: needs a CUDA device (run it on the GPU machine)")
        return
    g = torch.Generator(device="cuda").manual_seed(0)
    ref = torch.randn(N, device="cuda", generator=g)
    test = ref + 1e-7 * torch.randn(N, device="cuda", generator=g)
    test[12345] += 1.0
    out = torch.empty_like(ref)
    print(f"device {torch.cuda.get_device_name()}, torch {torch.__version__}, 2 x {N * 4 / 2**30:.0f} GiB float32")
    copy_ms = timed(lambda: out.copy_(ref))
    results = {}
    default = (triton_metrics.BLOCK, triton_metrics.NUM_WARPS, triton_metrics.PROGRAMS_PER_SM, triton_metrics.NUM_STAGES)
    configs = [default, (1024, 4, 16, 3), (1024, 4, 12, 3), (2048, 8, 4, 3), (1024, 4, 16, 4), (1024, 8, 16, 3)]
    for config in configs:
        (triton_metrics.BLOCK, triton_metrics.NUM_WARPS, triton_metrics.PROGRAMS_PER_SM,
         triton_metrics.NUM_STAGES) = config
        results[config] = timed(lambda: compare(ref, test, atol=ATOL, rtol=RTOL))
    best = min(results, key=results.get)
    triton_metrics.BLOCK, triton_metrics.NUM_WARPS, triton_metrics.PROGRAMS_PER_SM, triton_metrics.NUM_STAGES = best
    r = compare(ref, test, atol=ATOL, rtol=RTOL)
    assert r.worst_index == [12345] and r.mismatches >= 1, r
    ours = results[best]
    sum_ms = timed(lambda: sum_only(ref, test))
    naive_ms = timed(lambda: naive(ref, test))
    close_ms = timed(lambda: assert_close(ref, test))
    print(f"copy ceiling (1 GiB copy = 2 GiB of traffic): {copy_ms:.3f} ms = {2 * N * 4 / copy_ms / 1e9:.2f} TB/s")
    for (block, warps, per_sm, stages), ms in sorted(results.items()):
        print(f"  kdiff kernel BLOCK={block:<5} num_warps={warps} programs/SM={per_sm:<2} stages={stages}: {ms:.3f} ms")
    print(f"kdiff compare (every metric, worst element, one sync), best config: {ours:.3f} ms "
          f"= {2 * N * 4 / ours / 1e9:.2f} TB/s")
    print(f"diagnostic: the same persistent loop with only sum |a-b|: {sum_ms:.3f} ms "
          f"(what the loop structure alone costs at the best config)")
    print(f"naive torch metrics: {naive_ms:.3f} ms -> {naive_ms / ours:.1f}x")
    print(f"torch.testing.assert_close (bare verdict): {close_ms:.3f} ms -> {close_ms / ours:.1f}x")
    ok = ours <= 0.7 and naive_ms / ours >= 15 and close_ms / ours >= 8
    print(f"goal <= 0.7 ms, >= 15x naive, >= 8x assert_close: {'met' if ok else 'MISSED'}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
