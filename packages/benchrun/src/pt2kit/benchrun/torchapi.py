"""Every private torch API benchrun reads, each behind one small function (tests/test_torchapi.py).

They move between torch versions; each function returns None (or an empty result) where its API is
missing, so a record says "not measured" rather than a wrong number.
"""

from __future__ import annotations

import dataclasses
from typing import Any


def compile_metrics() -> list[dict[str, Any]]:
    """torch._dynamo's per-frame compilation metrics so far (one dict per compiled frame)."""
    try:
        from torch._dynamo.utils import get_compilation_metrics
    except ImportError:
        return []
    out = []
    for m in get_compilation_metrics():
        out.append(dataclasses.asdict(m) if dataclasses.is_dataclass(m) else dict(vars(m)))
    return out


def clear_compile_metrics() -> None:
    try:
        from torch._dynamo.utils import clear_compilation_metrics
    except ImportError:
        return
    clear_compilation_metrics()


def split_compile(metrics: list[dict[str, Any]]) -> dict[str, Any]:
    """The compile's parts in seconds, summed over frames: whole frame (Dynamo with its backend),
    backend (AOTAutograd with Inductor), Inductor; and the FX/AOT cache's hits and misses."""
    def total(key: str, scale: float = 1.0) -> float | None:
        vals = [m[key] for m in metrics if m.get(key) is not None]
        return sum(vals) * scale if vals else None

    frame = total("entire_frame_compile_time_s")
    backend = total("backend_compile_time_s")
    inductor = total("inductor_compile_time_s")
    hits = [total(k) for k in ("inductor_fx_local_cache_hit_count", "inductor_fx_remote_cache_hit_count",
                               "aotautograd_local_cache_hit_count", "aotautograd_remote_cache_hit_count")]
    misses = [total(k) for k in ("inductor_fx_local_cache_miss_count", "inductor_fx_remote_cache_miss_count",
                                 "aotautograd_local_cache_miss_count", "aotautograd_remote_cache_miss_count")]
    known_hits = [h for h in hits if h is not None]
    known_misses = [m for m in misses if m is not None]
    return {
        "frame_s": frame, "backend_s": backend, "inductor_s": inductor,
        "cache_hits": int(sum(known_hits)) if known_hits else None,
        "cache_misses": int(sum(known_misses)) if known_misses else None,
        "frames": [str(m.get("compile_id")) for m in metrics if m.get("compile_id") is not None],
    }


def dynamo_counts() -> dict[str, int]:
    """Graphs compiled so far, from torch._dynamo's counters (every graph, recompiles too: what
    torch._dynamo.explain counts). Breaks are counted from graphs, as explain counts them, never from the
    graph_break counter (which also counts breaks in frames Dynamo then skipped)."""
    from torch._dynamo.utils import counters

    return {"graphs": int(counters["stats"].get("unique_graphs", 0))}


def generated_kernels() -> int | None:
    """Kernels Inductor has generated in this process so far."""
    try:
        from torch._inductor import metrics
    except ImportError:
        return None
    n = getattr(metrics, "generated_kernel_count", None)
    return int(n) if n is not None else None


def device_us(event: Any) -> float:
    """An aggregated profiler event's own time on the device, in microseconds (renamed from *cuda* in 2.4+)."""
    for attr in ("self_device_time_total", "self_cuda_time_total"):
        v = getattr(event, attr, None)
        if v is not None:
            return float(v)
    return 0.0


def is_device_kernel(event: Any) -> bool:
    """A profiler event that is a kernel run on an accelerator (not a CPU op, not a memcpy/memset)."""
    kind = getattr(event, "device_type", None)
    name = getattr(kind, "name", str(kind))
    return name not in ("CPU", "None", "Meta") and "Memcpy" not in event.key and "Memset" not in event.key


def fallback_random() -> Any:
    """A context in which Inductor draws random numbers as eager does (``fallback_random``), so
    dropout agrees between the two sides of an accuracy check."""
    import torch._inductor.config

    return torch._inductor.config.patch(fallback_random=True)


def profile_cpp_kernels() -> None:
    """Build Inductor's C++ kernels with a RECORD_FUNCTION each, so torch.profiler names them."""
    import torch._inductor.config

    torch._inductor.config.cpp.enable_kernel_profile = True
