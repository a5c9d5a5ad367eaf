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
from dataclasses import dataclass
from typing import Any

from msgspec.structs import replace

from .job import Job
from .plan import JobSpec

TARGET = "pt2kit.benchrun.work:run"


@dataclass
class Outcome:
    """What one job left: its children's lines (to forward), then the fields of its `bench` record,
    or of its `crash` record when ``crashed`` (records.py's, typed), and why the warm child did not
    finish, if it did not."""

    lines: list[bytes]
    fields: dict[str, Any]
    crashed: bool = False
    warm_crash: str | None = None


def run_job(spec: JobSpec, job: Job, *, run: str, store: str, quiet: bool,
            on_stage: Callable[[str], None] | None = None, env: dict[str, str] | None = None) -> Outcome:
    """One job, cold then warm, each child given ``job`` narrowed to ``spec``'s model and backend."""
    from pt2kit.runtime.parent.child import run_in_child

    from .records import bench_fields, crash_fields

    lines: list[bytes] = []
    start = time.monotonic()
    cache = tempfile.mkdtemp(prefix="benchrun-inductor-")
    child_env = dict(os.environ if env is None else env, TORCHINDUCTOR_CACHE_DIR=cache)
    one = replace(job, model=spec.model, device=spec.device, config=dict(spec.config), from_stream=spec.from_stream,
                  backend=spec.backend)
    try:
        res = run_in_child(TARGET, replace(one, phase="cold", emit_model=spec.first_of_model), run=run, store=store,
                           on_record=lines.append, quiet=quiet, env=child_env, timeout=job.timeout,
                           on_stage=on_stage)
        if res.crash is not None:
            return Outcome(lines, crash_fields(spec, res.crash, time.monotonic() - start), crashed=True)
        cold, warm, warm_crash = res.value, None, None
        if spec.backend != "eager" and not cold.get("error"):
            if on_stage is not None:
                on_stage("warm cache: a fresh process compiles again")
            w = run_in_child(TARGET, replace(one, phase="warm", emit_model=False), run=run, store=store,
                             on_record=lines.append, quiet=quiet, env=child_env, timeout=job.timeout)
            warm = w.value if w.crash is None else None
            if w.crash is not None:
                warm_crash = w.crash.get("message")
        return Outcome(lines, bench_fields(spec, job, cold, warm, wall_s=time.monotonic() - start),
                       warm_crash=warm_crash)
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def run_local(jobs: list[JobSpec], job: Job, *, gpus: int, done: Callable[[JobSpec, Outcome], None],
              progress: Any, run: str, store: str, quiet: bool) -> None:
    """Every job here: one at a time, or one per GPU on ``gpus`` GPUs, each a task of ``progress``
    (a :class:`pt2kit.runtime.parent.progress.Progress`)."""
    if gpus <= 1:
        for j in jobs:
            with progress.task(j.key) as t:
                out = run_job(j, job, on_stage=t.stage, run=run, store=store, quiet=quiet)
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
                with progress.task(j.key) as t:
                    out = run_job(j, job, on_stage=t.stage, env=env, run=run, store=store, quiet=quiet)
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


def run_ray(jobs: list[JobSpec], job: Job, *, done: Callable[[JobSpec, Outcome], None], say: Callable[[str], None],
            run: str, store: str, quiet: bool) -> None:
    """Every job as a Ray task; results handed to ``done`` as tasks finish."""
    try:
        import ray
    except ImportError:
        from pt2kit.runtime.common.errors import UsageError

        raise UsageError("--executor ray: ray is not installed (pip install 'pt2kit-benchrun[ray]')") from None
    address = job.ray_address
    if not ray.is_initialized():
        ray.init(address=address, log_to_driver=False, include_dashboard=False,
                 runtime_env={"env_vars": {"PYTHONPATH": os.environ.get("PYTHONPATH", "")}})
    gpu = 1 if jobs and jobs[0].device.startswith("cuda") else 0
    # a CPU job takes a whole node (the smallest's CPUs): two timings sharing a CPU would skew both
    cpus = 1 if gpu else min((n["Resources"].get("CPU", 1) for n in ray.nodes() if n.get("Alive")), default=1)

    @ray.remote(max_retries=0)
    def task(j: JobSpec) -> Outcome:
        return run_job(j, job, run=run, store=store, quiet=quiet)

    pending = {task.options(num_gpus=gpu, num_cpus=cpus).remote(j): j for j in jobs}
    say(f"{len(jobs)} job(s) submitted to Ray at {address or 'a local cluster'}")
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        for ref in ready:
            done(pending.pop(ref), ray.get(ref))


def reachable(address: str) -> None:
    """A cluster address that answers, or one line: ray.init would otherwise retry for minutes."""
    import socket

    from pt2kit.runtime.common.errors import UsageError

    hostport = address.split("://", 1)[-1]
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit():
        return  # "auto" and the like: Ray resolves those itself
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as e:
        raise UsageError(f"--ray-address {address}: no Ray cluster answers there ({e.strerror or e})") from None
