"""The parent's side of a sweep: plan the jobs, run them, write and narrate the records.

Everything the user can get wrong is checked before the header is written (exit 2, nothing on
stdout): the flags' ranges by the Job itself, the files and the cluster here; after it, each job ends
in a `bench` or a `crash` record whatever the others do. Imports no torch (a CUDA device count asks
torch only when --device cuda runs locally).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from msgspec.structs import replace

from pt2kit.runtime.common.errors import EXIT_OK, UsageError
from pt2kit.runtime.parent.session import Session, torch_version
from pt2kit.schema import Bench, Crash

from .job import Job
from .narrate import Narrator
from .plan import JobSpec, durations_from, shard_jobs
from .sweep import Outcome, reachable, run_local, run_ray

HINT = "give MODEL.py files, zoo:NAME (see --zoo), or pipe records: `fxcheck m.py | benchrun`"


def run(s: Session, job: Job) -> int:
    """The sweep ``job`` names (or the zoo's listing, with --zoo); the worst job's exit code."""
    if job.zoo:
        from .zoo import listing

        return listing()
    jobs, timer = plan(s, job)
    if not jobs:
        return EXIT_OK
    job = replace(job, timer=timer)
    narrator = Narrator(s.say, "", job)

    def done(j: JobSpec, out: Outcome) -> None:
        for raw in out.lines:
            s.writer.forward(raw)
        narrator.on(s.emit(Crash if out.crashed else Bench, **out.fields))
        if out.warm_crash:
            s.warn(f"{j.key}: the warm-cache compile did not finish ({out.warm_crash}): no warm compile time")

    run_id, store = s.writer.run, str(s.store.root)
    if job.executor == "ray":
        run_ray(jobs, job, done=done, say=s.say, run=run_id, store=store, quiet=s.quiet)
    else:
        from pt2kit.runtime.parent.progress import Progress

        gpus = _gpus(jobs)
        if gpus > 1:
            s.say(f"{len(jobs)} jobs on {gpus} GPUs, one at a time on each")
        progress = Progress(s.tool, quiet=s.quiet, stream=sys.stderr if gpus == 1 else _Plain(sys.stderr))
        run_local(jobs, job, gpus=gpus, done=done, progress=progress, run=run_id, store=store, quiet=s.quiet)
    return narrator.finish()


def _timer(job: Job, devices: set[str]) -> str:
    cuda = any(d.startswith("cuda") for d in devices)
    if job.timer is None:
        return "events" if cuda else "wall"
    if job.timer != "wall" and not cuda:
        raise UsageError(f"--timer {job.timer}: needs a CUDA device; on a CPU benchrun times with perf_counter (wall)")
    return job.timer


def _models(s: Session, job: Job) -> list[Job]:
    """The sweep's job narrowed to each model: the command line's, else each `model` record on stdin's
    (``job.for_piped``: labelled as its record is, so a graph pt2kit capture took is ``train.py[0/1]``)."""
    from pt2kit.runtime.common.modelfile import label_of, parse_spec
    from pt2kit.runtime.parent.piped import each_piped

    from .zoo import resolve

    if job.models:
        out = []
        for m in job.models:
            spec = resolve(m)
            path, entry = parse_spec(spec)
            if not path.is_file():
                raise UsageError(f"{path}: no such model file")
            out.append(replace(job, model=spec, device=job.device or "cpu", label=label_of(path, entry)))
        s.header(torch=torch_version(), device=job.device or "cpu")
        return out
    return [job.for_piped(m) for m in
            each_piped(s, device=job.device, hint=HINT, config=job.config, stream_config=job.stream_config)]


def plan(s: Session, job: Job) -> tuple[list[JobSpec], str]:
    """The jobs of this shard, each (model, backend) once, and the timer they use."""
    if job.ray_address is not None:
        reachable(job.ray_address)
    durations = None
    if job.durations is not None:
        if not Path(job.durations).is_file():
            raise UsageError(f"--durations {job.durations}: no such file")
        durations = durations_from(ln.record for ln in s.read([job.durations], want=["bench", "crash"], forward=False))
    if job.models:  # checked before the header is out; piped models' devices are known only as they come
        _timer(job, {job.device or "cpu"})
    jobs = []
    for one in _models(s, job):
        for b in job.backends:
            jobs.append(JobSpec(model=one.model, label=one.label, backend=b, device=one.device,
                                config=tuple(sorted(one.config.items())), from_stream=one.from_stream))
    timer = _timer(job, {j.device for j in jobs} or {job.device or "cpu"})
    if job.shard is not None:
        jobs = shard_jobs(jobs, *job.shard, durations)
        s.say(f"shard {job.shard[0]}/{job.shard[1]}: {len(jobs)} job(s)"
              + (" (balanced by --durations)" if durations else ""))
    seen: set[str] = set()
    out = []
    for j in jobs:  # the first job of each model in this shard writes its `model` record
        out.append(JobSpec(**{**j.__dict__, "first_of_model": j.model not in seen and not j.from_stream}))
        seen.add(j.model)
    return out, timer


def _gpus(jobs: list[JobSpec]) -> int:
    """Parallel local workers: one per visible GPU for plain ``--device cuda``, else one."""
    if len(jobs) < 2 or any(j.device != "cuda" for j in jobs):
        return 1
    import torch

    return max(1, torch.cuda.device_count())


class _Plain:
    """stderr as seen by the progress display when several jobs run at once: not a terminal, so each
    stage is one plain line (live lines from several threads would overwrite each other)."""

    def __init__(self, stream: Any) -> None:
        self._s = stream

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        return self._s.write(text)

    def flush(self) -> None:
        self._s.flush()
