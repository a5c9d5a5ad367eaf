"""The parent's side of aotiprint: check the target, run the worker, then build, decide and write the
`kernel` records and say what they mean.

Guarantees: every input the user can get wrong (a missing package, one built without the printer, a
--save-package that would overwrite the model file) is exit 2 in one line before the header. The
worker's `kernel` records and the AOTI printer's output are held in this process and written after
the run, whether it ended or crashed, so a worker that dies loses none of them; a crash record names
the last kernel launched, or the unprinted extern call after it (:func:`.records.last_kernel`). Not
guaranteed: which of several unprinted extern calls between two printed launches died (all are
named); the call named for a package built with a kernel filter (the fused kernels it leaves unprinted
are not seen); the kernel named on a CUDA device without --ima (launches are asynchronous: the printer
may have printed past the one that faulted). Imports no torch.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import msgspec
from msgspec.structs import replace

from pt2kit.runtime.common.errors import ModelFileError, UsageError
from pt2kit.runtime.common.modelfile import parse_spec
from pt2kit.runtime.parent.session import Session, torch_version
from pt2kit.runtime.parent.writes import check_output, write_output
from pt2kit.schema import Kernel, decode

from . import records
from .job import Job
from .narrate import Narrator
from .work import Result


def run(s: Session, job: Job) -> int:
    """Run ``job`` for its one target (a model file or a PACKAGE.pt2); the exit code of the run."""
    if job.package is not None:
        if not Path(job.package).is_file():
            raise ModelFileError(f"{job.package}: no such package")
        job = replace(job, detail=_package_detail(s, job.package, job.detail), emit_model=False)
        label = Path(job.package).name
        s.header(torch=torch_version(), device=job.device)
    else:
        assert job.model is not None
        if job.save_package is not None:
            check_output("--save-package", job.save_package, [("the model file", str(parse_spec(job.model)[0]))])
        label = s.open_model(job.model, device=job.device or "cpu")
    device = job.device or "cpu"
    if job.ima and not device.startswith("cuda"):
        s.warn("--ima hunts CUDA illegal memory accesses; on the CPU it only runs launches one at a time")
    env = None
    if job.ima:
        env = {**os.environ, "CUDA_LAUNCH_BLOCKING": "1", "PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}
    with tempfile.TemporaryDirectory(prefix="aotiprint-") as tmp:
        one = replace(job, device=device, label=label, log=os.path.join(tmp, "printer.log"), workdir=tmp)
        code = _one(s, one, env)
        if job.save_package is not None:
            code = max(code, _keep_package(s, Path(tmp) / "model.pt2", Path(job.save_package)))
        return code


def _one(s: Session, job: Job, env: dict[str, str] | None) -> int:
    narrator = Narrator(s.say, job.label, job)
    held: list[Kernel] = []

    def on_record(raw: bytes) -> None:
        try:
            rec = decode(raw)
        except (msgspec.DecodeError, msgspec.ValidationError):
            # as Narrator.record does: a line this schema cannot read is passed on, not narrated
            s.writer.forward(raw)
            return
        if isinstance(rec, Kernel):
            # held until the run ends: which launch is the finding depends on the outputs (held here,
            # in the parent, so a child that dies loses none of them)
            held.append(rec)
        else:
            s.writer.forward(raw)
            narrator.on(rec)

    res = s.run_child(job.label, "pt2kit.aotiprint.work:run", job, on_record=on_record, timeout=job.timeout, env=env)
    value = None if res.value is None else msgspec.convert(res.value, Result)
    log = wrapper = None
    targets: list[str] = []
    if job.jit:
        kernels = records.decided(held, value)
        for r in kernels:
            s.writer.emit(r)
            narrator.on(r)
    else:
        log, wrapper, targets, kernels = _aoti_kernels(s, job, res, value)
        for r in kernels:
            narrator.on(r)
    code = narrator.finish(value if res.crash is None else None, res.notes)
    if res.crash is None:
        return code
    crash = dict(res.crash)
    crash["last_kernel"] = crash.get("last_kernel") or records.last_kernel(log, kernels, wrapper, targets)
    code = s.crash(job.label, crash)
    if crash.get("stage") == "load":
        # seen on torch 2.11: every AOTI package segfaults in its own container constructor
        s.say(f"{job.label}: the package compiled; loading it crashed in torch's AOTI runtime before any "
              "kernel ran. --jit instruments the same model's kernels through torch.compile")
    return code


def _aoti_kernels(s: Session, job: Job, res: Any, value: Result | None) -> tuple[Any, Any, list[str], list[Kernel]]:
    """(the parsed printer log, the package's wrapper, its proxy-executor ops, the `kernel` records written)."""
    from .printer import parse_file
    from .wrapper import analyse, read_extern_targets, read_wrapper

    log = parse_file(job.log)
    package = job.package or res.notes.get("package")
    src = read_wrapper(package) if package else None
    wrapper = analyse(src) if src else None
    saved = None if value is None else value.saved
    fields = records.decided(records.from_printer(log, wrapper, res.notes.get("provenance") or {}, saved,
                                                  job.kernels), value)
    targets = read_extern_targets(package) if package and wrapper is not None and wrapper.externs else []
    return log, wrapper, targets, [s.emit(Kernel, model=job.label, **f.as_dict()) for f in fields]


def _keep_package(s: Session, built: Path, dest: Path) -> int:
    """The compiled package, moved from the worker's folder to --save-package through a rename; if it
    cannot be written there now, it stays in the store and stderr says where (exit 2 where the path was
    refused at the write: a file made there since)."""
    if not built.is_file():
        return 0  # the compile never finished: the crash record says at which stage
    data = built.read_bytes()
    try:
        write_output(dest, data, flag="--save-package")  # checked again now: a file made since is not ours
    except UsageError as e:  # refused at the write: one line, and the package stays in the store
        return s.refuse(UsageError(f"{e}; the package is in the store: "
                                   f"{s.store.path(s.store.put(data, 'application/zip', '.pt2'))}"), None)
    except OSError as e:
        s.warn(f"--save-package {dest}: cannot write it now ({e.strerror or e}); the package is in the store: "
               f"{s.store.path(s.store.put(data, 'application/zip', '.pt2'))}")
    return 0


def _package_detail(s: Session, package: str, detail: str) -> str:
    """The printer detail a package was built with (it is compiled in), warning when it is not ``detail``."""
    from .wrapper import analyse, read_wrapper

    src = read_wrapper(package)
    if src is None:
        s.warn(f"{package}: no wrapper source inside; buffers before launch cannot be told from inputs")
        return detail
    built = analyse(src).modes
    if not built:
        raise UsageError(f"{package}: compiled without the intermediate value printer, so it prints nothing; "
                         "recompile with aot_inductor.debug_intermediate_value_printer=2, or give MODEL.py")
    if detail not in built:
        have = sorted(built)[0]
        s.warn(f"{package}: built with the printer in mode {have}, not {detail}; reading {have} "
               "(the mode is compiled in: give MODEL.py to change it)")
        return have
    return detail
