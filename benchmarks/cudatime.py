"""GPU timing for the benchmarks: CUDA events around each call, median after a warm-up (not a bench_ file)."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

import torch


def timed(fn: Callable[[], Any], repeat: int = 20) -> float:
    """Median milliseconds of ``fn()`` over ``repeat`` calls, after 3 warm-up calls."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)
