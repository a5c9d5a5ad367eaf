"""The parent's side of a sweep: check the command line, plan the jobs, run them, write the records.

Everything the user can get wrong is checked before the header is written (exit 2, nothing on
stdout); after it, each job ends in a `bench` or a `crash` record whatever the others do. Imports
no torch (a CUDA device count asks torch only when --device cuda runs locally).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pt2kit.runtime.errors import EXIT_CRASH, EXIT_FINDINGS, EXIT_OK, UsageError
from pt2kit.runtime.flags import check_finite, check_range, check_seconds, check_seed
from pt2kit.runtime.session import Session, torch_version

from . import narrate
from .plan import MAX_CALLS, JobSpec, backends_of, durations_from, parse_shard, shard_jobs


@dataclass
class Options:
    backends: list[str]
    mode: str = "infer"
    device: str | None = None
    dtype: str | None = None
    repeat: int | None = None
    warmup: int = 5
    budget: float = 1.0
    timer: str | None = None
    accuracy: bool = True
    profile_kernels: bool = False
    fail_below: float | None = None
    shard: str | None = None
    durations: Path | None = None
    executor: str = "local"
    ray_address: str | None = None
    seed: int = 0
    precision: str = "harness"
    timeout: float | None = None
    config: list[str] = field(default_factory=list)
    stream_config: bool = True


def _timer(o: Options, devices: set[str]) -> str:
    cuda = any(d.startswith("cuda") for d in devices)
    if o.timer is None:
        return "events" if cuda else "wall"
    if o.timer != "wall" and not cuda:
        raise UsageError(f"--timer {o.timer}: needs a CUDA device; on a CPU benchrun times with perf_counter (wall)")
    return o.timer


def _model_specs(s: Session, models: list[str], o: Options, cfg: dict[str, str]) -> list[tuple[str, str, dict[str, str], bool]]:
    """(spec, device, config, from_stream) of each model: the command line's, else stdin's `model` records."""
    from pt2kit.runtime.modelfile import parse_spec

    from .zoo import resolve

    if models:
        out = []
        for m in models:
            spec = resolve(m)
            path, _ = parse_spec(spec)
            if not path.is_file():
                raise UsageError(f"{path}: no such model file")
            out.append((spec, o.device or "cpu", cfg, False))
        s.header(torch=torch_version(), device=o.device or "cpu")
        return out
    hint = "give MODEL.py files, zoo:NAME (see --zoo), or pipe records: `fxcheck m.py | benchrun`"
    return [(spec, dev, c, True) for spec, dev, c in
            s.piped_models(device=o.device, hint=hint, config=cfg, stream_config=o.stream_config)]


def plan(s: Session, models: list[str], o: Options) -> tuple[list[JobSpec], str]:
    from pt2kit.runtime.config import parse_config
    from pt2kit.runtime.modelfile import label_of, parse_spec

    backends = backends_of(o.backends)
    check_seconds("--timeout", o.timeout)
    check_seconds("--budget", o.budget)
    check_finite("--fail-below", o.fail_below, positive=True)
    check_range("--repeat", o.repeat, 3, MAX_CALLS)
    check_range("--warmup", o.warmup, 0, MAX_CALLS)
    check_seed("--seed", o.seed)
    shard = parse_shard(o.shard)
    if o.durations is not None and shard is None:
        raise UsageError("--durations: only balances --shard; give --shard I/N too")
    if o.ray_address is not None and o.executor != "ray":
        raise UsageError("--ray-address: give --executor ray too")
    if o.ray_address is not None:
        from .sweep import reachable

        reachable(o.ray_address)
    durations = None
    if o.durations is not None:
        if not o.durations.is_file():
            raise UsageError(f"--durations {o.durations}: no such file")
        durations = durations_from(
            {"kind": ln.kind, "model": getattr(ln.record, "model", None), "backend": getattr(ln.record, "backend", None),
             "wall_s": getattr(ln.record, "wall_s", None)}
            for ln in s.read([str(o.durations)], want=["bench", "crash"], forward=False) if ln.record is not None)
    cfg = parse_config(o.config)
    if models:  # checked before the header is out; piped models' devices are known only as they come
        _timer(o, {o.device or "cpu"})
    jobs = []
    for spec, dev, c, piped in _model_specs(s, models, o, cfg):
        label = label_of(*parse_spec(spec))
        for b in backends:
            jobs.append(JobSpec(model=spec, label=label, backend=b, device=dev, config=tuple(sorted(c.items())),
                                from_stream=piped))
    timer = _timer(o, {j.device for j in jobs} or {o.device or "cpu"})
    if shard is not None:
        jobs = shard_jobs(jobs, *shard, durations)
        s.say(f"shard {shard[0]}/{shard[1]}: {len(jobs)} job(s)" + (" (balanced by --durations)" if durations else ""))
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


def drive(s: Session, models: list[str], o: Options) -> int:
    jobs, timer = plan(s, models, o)
    if not jobs:
        return EXIT_OK
    opts: dict[str, Any] = {"mode": o.mode, "dtype": o.dtype, "timer": timer, "repeat": o.repeat, "warmup": o.warmup,
                            "budget_s": o.budget, "accuracy": o.accuracy, "profile_kernels": o.profile_kernels,
                            "seed": o.seed, "precision": o.precision}
    rows: list[dict[str, Any]] = []
    code = [EXIT_OK]

    def done(j: JobSpec, out: dict[str, Any]) -> None:
        from pt2kit.schema import Bench, Crash

        for raw in out["records"]:
            s.writer.forward(raw)
        if out.get("crash") is not None:
            s.emit(Crash, **out["crash"])
            s.say(narrate.crash_line(out["crash"]))
            rows.append({"kind": "crash", **out["crash"]})
            code[0] = max(code[0], EXIT_CRASH)
            return
        b = out["bench"]
        s.emit(Bench, **b)
        s.say(narrate.job_line(b))
        if out.get("warm_crash"):
            s.warn(f"{j.key}: the warm-cache compile did not finish ({out['warm_crash']}): no warm compile time")
        rows.append(b)
        code[0] = max(code[0], _exit_for(b, o.fail_below))

    kw = {"run": s.writer.run, "store": str(s.store.root), "quiet": s.quiet, "timeout": o.timeout}
    if o.executor == "ray":
        from .sweep import run_ray

        run_ray(jobs, opts, address=o.ray_address, done=done, say=s.say, **kw)
    else:
        from pt2kit.runtime.progress import Progress

        from .sweep import run_local

        gpus = _gpus(jobs)
        if gpus > 1:
            s.say(f"{len(jobs)} jobs on {gpus} GPUs, one at a time on each")
        progress = Progress(s.tool, quiet=s.quiet, stream=sys.stderr if gpus == 1 else _Plain(sys.stderr))
        run_local(jobs, opts, gpus=gpus, done=done, task=lambda j: progress.task(j.key), **kw)
    if len(rows) > 1:
        for line in narrate.table(rows):
            s.say(line)
    return code[0]


def _exit_for(b: dict[str, Any], fail_below: float | None) -> int:
    if b.get("accuracy") == "fail_to_run":
        return EXIT_CRASH
    if b.get("accuracy") == "fail_accuracy":
        return EXIT_FINDINGS
    if fail_below is not None and b.get("speedup_hi") is not None and b["speedup_hi"] < fail_below:
        return EXIT_FINDINGS
    return EXIT_OK


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
