"""GPU timing for the benchmarks: CUDA events around each call, median after a warm-up (not a bench_ file)."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

import torch


def timed(fn: Callable[[], Any], repeat: int = 20, gpu_only: bool = False) -> float:
    """Median milliseconds of ``fn()`` over ``repeat`` calls, after 3 warm-up calls.

    With ``gpu_only`` a sleeping kernel queued ahead of each call keeps the GPU busy while the host
    launches, so the events time the kernels alone and not the host's launch path.
    """
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        if gpu_only:
            torch.cuda._sleep(2_000_000)  # ~1 ms: longer than any host work in fn before its first launch
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)
