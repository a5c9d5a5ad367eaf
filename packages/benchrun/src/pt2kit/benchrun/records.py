"""The `bench` record of one job, from what its cold and warm children returned. Imports no torch."""

from __future__ import annotations

from typing import Any

from .stats import speedup_interval, summary

TOP_KERNELS = 10


def bench_fields(job: Any, cold: dict[str, Any], warm: dict[str, Any] | None, *, wall_s: float, timer: str,
                 mode: str, dtype: str | None) -> dict[str, Any]:
    """Fields of the `bench` record (kind ``bench``) for ``job`` (a plan.JobSpec)."""
    f: dict[str, Any] = {"model": job.label, "backend": job.backend, "device": job.device, "mode": mode,
                         "dtype": dtype, "wall_s": round(wall_s, 3)}
    if cold.get("error"):
        f.update(accuracy="fail_to_run", error=cold["error"])
        return f
    f["timer"] = timer
    if cold.get("compile"):
        f["compile_cold"] = cold["compile"]
        f["compile_s"] = cold["compile"]["total_s"]
    if warm and warm.get("compile"):
        f["compile_warm"] = warm["compile"]
    e, t = cold.get("eager"), cold.get("test")
    if e and t:
        f["eager"] = summary(e)
        f["latency"] = summary(t)
        f["speedup"], f["speedup_lo"], f["speedup_hi"] = speedup_interval(e, t)
    for key in ("memory", "eager_memory", "graphs", "breaks", "recompiles", "kernels", "launches", "accuracy",
                "accuracy_note", "kernel_table"):
        if cold.get(key) is not None:
            f[key] = cold[key]
    mem, emem = cold.get("memory") or {}, cold.get("eager_memory") or {}
    if mem.get("warm_allocated"):
        f["peak_mem_bytes"] = mem["warm_allocated"]
        if emem.get("warm_allocated"):
            f["compression"] = emem["warm_allocated"] / mem["warm_allocated"]
    if cold.get("kernel_rows"):
        f["top_kernels"] = cold["kernel_rows"][:TOP_KERNELS]
    return f


def crash_fields(job: Any, crash: dict[str, Any], wall_s: float) -> dict[str, Any]:
    return {"model": job.label, "backend": job.backend, **crash, "wall_s": round(wall_s, 3)}
