"""Running a sweep's jobs: each (model, backend) in children of its own, here or on a Ray cluster.

Guarantees:

* A job is a cold child (an empty Inductor cache of its own, made here and removed after) and, for
  a compiled backend whose cold run ran, a warm child (a fresh process given that cache): its
  compile is the one a user pays on a second run. Each child is ``runtime.child``'s: a crash or a
  ``--timeout`` becomes a `crash` record naming the model, the backend and the stage, and the sweep
  goes on.
* Local: one job at a time, so no two timings share the machine; with ``--device cuda`` on a host
  with several GPUs, one job per GPU at a time (``CUDA_VISIBLE_DEVICES`` set for each child).
* Ray (``--executor ray``): every job is a Ray task on an existing cluster (``--ray-address``, else
  a local one), a GPU each when the device is CUDA, a whole node's CPUs when it is a CPU (no two
  CPU timings share a node); its records come back as each task ends. The
  workers need this package installed and the model files at the same paths (a shared filesystem),
  and write blobs into the same ``--store`` path.
* Records reach stdout whole, one job's at a time, under one lock.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

from .plan import JobSpec

TARGET = "pt2kit.benchrun.work:run"


def run_job(spec: JobSpec, opts: dict[str, Any], *, run: str, store: str, quiet: bool,
            timeout: float | None, on_stage: Callable[[str], None] | None = None,
            env: dict[str, str] | None = None) -> dict[str, Any]:
    """One job, cold then warm: {"records": [raw lines], "bench": fields | None, "crash": fields | None}."""
    from pt2kit.runtime.child import run_in_child

    from .job import Job
    from .records import bench_fields, crash_fields

    lines: list[bytes] = []
    start = time.monotonic()
    cache = tempfile.mkdtemp(prefix="benchrun-inductor-")
    child_env = dict(os.environ if env is None else env, TORCHINDUCTOR_CACHE_DIR=cache)
    common = {"model": spec.model, "device": spec.device, "config": dict(spec.config),
              "from_stream": spec.from_stream, "backend": spec.backend, **opts}
    try:
        res = run_in_child(TARGET, Job(**common, phase="cold", emit_model=spec.first_of_model), run=run, store=store,
                           on_record=lines.append, quiet=quiet, env=child_env, timeout=timeout, on_stage=on_stage)
        if res.crash is not None:
            return {"records": lines, "bench": None,
                    "crash": crash_fields(spec, res.crash, time.monotonic() - start)}
        cold, warm = res.value, None
        if spec.backend != "eager" and not cold.get("error"):
            if on_stage is not None:
                on_stage("warm cache: a fresh process compiles again")
            w = run_in_child(TARGET, Job(**common, phase="warm", emit_model=False), run=run, store=store,
                             on_record=lines.append, quiet=quiet, env=child_env, timeout=timeout)
            warm = w.value if w.crash is None else None
            if w.crash is not None:
                cold["warm_crash"] = w.crash.get("message")
        fields = bench_fields(spec, cold, warm, wall_s=time.monotonic() - start, timer=opts["timer"],
                              mode=opts["mode"], dtype=opts["dtype"])
        return {"records": lines, "bench": fields, "crash": None, "warm_crash": cold.get("warm_crash")}
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def run_local(jobs: list[JobSpec], opts: dict[str, Any], *, gpus: int, done: Callable[[JobSpec, dict[str, Any]], None],
              task: Callable[[JobSpec], Any], **kw: Any) -> None:
    """Every job here: one at a time, or one per GPU on ``gpus`` GPUs."""
    if gpus <= 1:
        for j in jobs:
            with task(j) as t:
                out = run_job(j, opts, on_stage=t.stage, **kw)
            done(j, out)
        return
    lock = threading.Lock()
    queue = list(reversed(jobs))
    failure: list[BaseException] = []

    def worker(gpu: int) -> None:
        env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(gpu))
        while not failure:
            with lock:
                if not queue:
                    return
                j = queue.pop()
            try:
                with task(j) as t:
                    out = run_job(j, opts, on_stage=t.stage, env=env, **kw)
                with lock:
                    done(j, out)
            except BaseException as e:  # stop the other workers at their next job
                failure.append(e)
                return

    threads = [threading.Thread(target=worker, args=(g,), daemon=True) for g in range(gpus)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failure:
        raise failure[0]


def run_ray(jobs: list[JobSpec], opts: dict[str, Any], *, address: str | None, done: Callable[[JobSpec, dict[str, Any]], None],
            say: Callable[[str], None], **kw: Any) -> None:
    """Every job as a Ray task; results handed to ``done`` as tasks finish."""
    try:
        import ray
    except ImportError:
        from pt2kit.runtime.errors import UsageError

        raise UsageError("--executor ray: ray is not installed (pip install 'pt2kit-benchrun[ray]')") from None
    if not ray.is_initialized():
        ray.init(address=address, log_to_driver=False, include_dashboard=False,
                 runtime_env={"env_vars": {"PYTHONPATH": os.environ.get("PYTHONPATH", "")}})
    gpu = 1 if jobs and jobs[0].device.startswith("cuda") else 0
    # a CPU job takes a whole node (the smallest's CPUs): two timings sharing a CPU would skew both
    cpus = 1 if gpu else min((n["Resources"].get("CPU", 1) for n in ray.nodes() if n.get("Alive")), default=1)

    @ray.remote(max_retries=0)
    def task(j: JobSpec) -> dict[str, Any]:
        return run_job(j, opts, **kw)

    pending = {task.options(num_gpus=gpu, num_cpus=cpus).remote(j): j for j in jobs}
    say(f"{len(jobs)} job(s) submitted to Ray at {address or 'a local cluster'}")
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        for ref in ready:
            done(pending.pop(ref), ray.get(ref))


def reachable(address: str) -> None:
    """A cluster address that answers, or one line: ray.init would otherwise retry for minutes."""
    import socket

    from pt2kit.runtime.errors import UsageError

    hostport = address.split("://", 1)[-1]
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit():
        return  # "auto" and the like: Ray resolves those itself
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as e:
        raise UsageError(f"--ray-address {address}: no Ray cluster answers there ({e.strerror or e})") from None
