"""How one call of a model is timed, on each device: the methodology a reader of the numbers relies on.

Guarantees:

* Sides (eager and the backend) are sampled *interleaved*, in turn, the order swapped every round,
  so clock and frequency drift land on both alike (the PyTorch harness's reason for interleaving).
  ``wall`` takes one call of each in turn. The CUDA timers take blocks of 3 to 20 calls (about
  20 ms) of each in turn, and drop the first call of each block: a call that follows the other
  side's starts on an idle device, so its events would time the host's launches where do_bench,
  timing calls back to back, times the device (measured on the H100: +23% on the SSM loop's
  compiled side when every call alternated).
* ``events`` (CUDA): ``triton.testing.do_bench``'s method without Triton: before each sample a
  256 MB buffer is zeroed to flush the L2 cache, CUDA events are recorded around the one call, and
  the host synchronises once at the end, so the host's launch time is hidden as it is in real use
  and the sample is the device's time for the call.
* ``cudagraph`` (CUDA): each side is captured once in a CUDA graph and its replays are timed as
  above: the kernels' own time, with no launch overhead, as ``do_bench_cudagraph`` reports.
* ``wall``: ``time.perf_counter`` around the call, the device synchronised before and after. On a
  CPU this is the only timer, and needs no synchronisation.
* Sample counts: ``repeat`` per side when given, else as many as fit in ``budget_s`` per side at the
  warm-up's pace, at least 10 and at most 1000.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

FLUSH_BYTES = 256 * 1024 * 1024  # do_bench's L2 flush buffer
MIN_SAMPLES, MAX_SAMPLES = 10, 1000
BLOCK_S, BLOCK_MAX = 0.02, 20  # CUDA timers: a side's block of calls lasts about 20 ms, 3 to 20 calls


def sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def samples_for(per_call_s: float, repeat: int | None, budget_s: float) -> int:
    if repeat is not None:
        return repeat
    if per_call_s <= 0:
        return MAX_SAMPLES
    return max(MIN_SAMPLES, min(MAX_SAMPLES, int(budget_s / per_call_s)))


def cuda_graph_replay(fn: Callable[[], Any]) -> Callable[[], Any]:
    """``fn`` captured in a CUDA graph (after warm-up calls on a side stream): its replay."""
    import torch

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    torch.cuda.synchronize()
    return graph.replay


def interleaved(fns: list[Callable[[], Any]], n: int, *, timer: str, device: str,
                block_hint: float | None = None) -> list[list[float]]:
    """``n`` samples (seconds per call) of each of ``fns``, taken in turn (``block_hint``: seconds per
    call of the slowest, which sizes the blocks of the CUDA timers)."""
    order = list(range(len(fns)))
    if timer == "wall" or not device.startswith("cuda"):
        out: list[list[float]] = [[] for _ in fns]
        cuda = device.startswith("cuda")
        for i in range(n):
            for k in (order if i % 2 == 0 else order[::-1]):
                if cuda:
                    sync(device)
                t0 = time.perf_counter()
                fns[k]()
                if cuda:
                    sync(device)
                out[k].append(time.perf_counter() - t0)
        return out
    import torch

    flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device=device)
    per_call = block_hint if block_hint else 0.0
    block = max(3, min(BLOCK_MAX, int(BLOCK_S / per_call))) if per_call > 0 else BLOCK_MAX
    pairs: list[list[tuple[Any, Any]]] = [[] for _ in fns]
    rounds = 0
    while min(len(p) for p in pairs) < n:
        for k in (order if rounds % 2 == 0 else order[::-1]):
            take = min(block, n - len(pairs[k]))
            for i in range(take + 1 if take > 0 else 0):
                flush.zero_()
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                fns[k]()
                end.record()
                if i:  # the block's first call starts on an idle device: not kept
                    pairs[k].append((start, end))
        rounds += 1
    torch.cuda.synchronize()
    return [[s.elapsed_time(e) / 1e3 for s, e in pairs[k]] for k in order]


def peak_memory(fn: Callable[[], Any], calls: int, device: str) -> tuple[int, int] | None:
    """(peak allocated, peak reserved) bytes over ``calls`` calls; None where the device keeps no
    allocator statistics (CPU)."""
    if not device.startswith("cuda"):
        return None
    import torch

    torch.cuda.synchronize()
    torch.cuda.empty_cache()  # reserved memory only grows: without this it would be every earlier peak's
    torch.cuda.reset_peak_memory_stats()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return int(torch.cuda.max_memory_allocated()), int(torch.cuda.max_memory_reserved())


def timed_call(fn: Callable[[], Any], device: str) -> tuple[float, Any]:
    """(wall seconds, result) of one call, the device synchronised before and after."""
    sync(device)
    t0 = time.perf_counter()
    out = fn()
    sync(device)
    return time.perf_counter() - t0, out
