"""The `bench` record of one job, from what its cold and warm children returned. Imports no torch.

The fields are typed (Latency, CompileTime, Memory, KernelTime), so the parent emits a Bench whose
every part its narrator reads as a Struct; a field a child could not measure is left out.
"""

from __future__ import annotations

from typing import Any

from pt2kit.schema import BlobRef, CompileTime, KernelTime, Latency, Memory

from .latency import speedup_interval, summary

TOP_KERNELS = 10


def bench_fields(spec: Any, job: Any, cold: dict[str, Any], warm: dict[str, Any] | None, *,
                 wall_s: float) -> dict[str, Any]:
    """Fields of the `bench` record (kind ``bench``) for ``spec`` (a plan.JobSpec) measured as ``job``
    (the sweep's Job, its timer resolved) says."""
    f: dict[str, Any] = {"model": spec.label, "backend": spec.backend, "device": spec.device, "mode": job.mode,
                         "dtype": job.dtype, "wall_s": round(wall_s, 3)}
    if cold.get("error"):
        f.update(accuracy="fail_to_run", error=cold["error"])
        return f
    f["timer"] = job.timer
    if cold.get("compile"):
        f["compile_cold"] = CompileTime(**cold["compile"])
        f["compile_s"] = cold["compile"]["total_s"]
    if warm and warm.get("compile"):
        f["compile_warm"] = CompileTime(**warm["compile"])
    e, t = cold.get("eager"), cold.get("test")
    if e and t:
        f["eager"] = Latency(**summary(e))
        f["latency"] = Latency(**summary(t))
        f["speedup"], f["speedup_lo"], f["speedup_hi"] = speedup_interval(e, t)
    for key in ("memory", "eager_memory"):
        if cold.get(key) is not None:
            f[key] = Memory(**cold[key])
    for key in ("graphs", "breaks", "recompiles", "kernels", "launches", "accuracy", "accuracy_note"):
        if cold.get(key) is not None:
            f[key] = cold[key]
    if cold.get("kernel_table") is not None:
        f["kernel_table"] = BlobRef(**cold["kernel_table"])
    mem, emem = cold.get("memory") or {}, cold.get("eager_memory") or {}
    if mem.get("warm_allocated"):
        f["peak_mem_bytes"] = mem["warm_allocated"]
        if emem.get("warm_allocated"):
            f["compression"] = emem["warm_allocated"] / mem["warm_allocated"]
    if cold.get("kernel_rows"):
        f["top_kernels"] = [KernelTime(**r) for r in cold["kernel_rows"][:TOP_KERNELS]]
    return f


def crash_fields(spec: Any, crash: dict[str, Any], wall_s: float) -> dict[str, Any]:
    return {"model": spec.label, "backend": spec.backend, **crash, "wall_s": round(wall_s, 3)}
