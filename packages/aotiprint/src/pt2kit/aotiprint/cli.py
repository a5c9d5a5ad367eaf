"""aotiprint MODEL.py[:NAME] | PACKAGE.pt2 --inputs FILE.py[:NAME]: per-kernel intermediate values of
AOT Inductor (default) or JIT Inductor (--jit), as `kernel` records; the first kernel that makes NaN or
Inf; the kernel a crash happened in.

AOTI: exports the model, compiles it with aoti_compile_and_package and the intermediate value
printer on (--mode names: launch order only; stats: every argument's numel, dtype, shape, stride,
mean, min, max, NaN/Inf counts; save: every argument saved into the store, one file per launch and
argument), loads and runs it in a child process, and turns the printer's output into one `kernel`
record per launch and side (before/after). Output buffers before their launch are marked
uninitialised, never findings. --kernels keeps the named kernels only.

--jit: torch.compile with Inductor, every launch of the generated Python wrapper instrumented
(C++, Triton and extern kernels alike), with one-pass statistics.

--ima (CUDA illegal memory access): blocking launches, the caching allocator off, kernel names
only unless --mode says otherwise; the crash record names the last kernel launched.

Exit 0 clean, 1 NaN/Inf found, 2 bad input, 3 crash (a `crash` record says at which stage:
load model, export, compile, load, run).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Annotated, Any

import click
import typer

from pt2kit.runtime.errors import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, ModelFileError, UsageError
from pt2kit.runtime.modelfile import parse_spec
from pt2kit.runtime.options import Config, Debug, Device, Quiet, Store, Timeout, Version, command, tool_app
from pt2kit.runtime.session import Session, torch_version
from pt2kit.runtime.writes import check_output, write_output

from . import __version__

app = tool_app("aotiprint", __doc__ or "")


@command(app)
def aotiprint(
    target: Annotated[str, typer.Argument(metavar="MODEL.py[:NAME] | PACKAGE.pt2", show_default=False)],
    mode: Annotated[str | None, typer.Option(
        click_type=click.Choice(["names", "stats", "save"]), show_default=False,
        help="What the printer records [default: stats; names with --ima].")] = None,
    kernels: Annotated[str | None, typer.Option(
        metavar="K1,K2", show_default=False, help="Only these kernels (names as the printer shows them).")] = None,
    jit: Annotated[bool, typer.Option(
        "--jit", help="JIT Inductor (torch.compile) with our own per-kernel probes, not AOTI.")] = False,
    ima: Annotated[bool, typer.Option(
        "--ima", help="Hunt a CUDA illegal memory access: blocking launches, no caching allocator.")] = False,
    inputs: Annotated[str | None, typer.Option(
        metavar="FILE.py[:NAME]", show_default=False,
        help="Inputs for a PACKAGE.pt2: example_inputs, or NAME (a tuple/dict, or a function returning one).")] = None,
    save_package: Annotated[Path | None, typer.Option(
        metavar="PATH", dir_okay=False, show_default=False,
        help="Keep the compiled AOTI package here (to rerun it: aotiprint PATH --inputs MODEL.py).")] = None,
    device: Device = "cpu",
    timeout: Timeout = None,
    config: Config = None,
    store: Store = None,
    quiet: Quiet = False,
    debug: Debug = False,
    version: Version = False,
) -> None:
    s = Session("aotiprint", __version__, store=store, quiet=quiet, debug=debug)
    s.run(lambda: _work(s, target, mode, kernels, jit, ima, inputs, device, list(config or ()), timeout, save_package))


def _kernel_list(kernels: str | None) -> list[str] | None:
    if kernels is None:
        return None
    names = [k.strip() for k in kernels.split(",") if k.strip()]
    if not names:
        raise UsageError("--kernels: give kernel names, e.g. --kernels cpp_fused_relu_0,aoti_torch_cpu_addmm_out")
    return names


def _work(s: Session, target: str, mode: str | None, kernels_arg: str | None, jit: bool, ima: bool,
          inputs: str | None, device: str, config: list[str], timeout: float | None,
          save_package: Path | None = None) -> int:
    from pt2kit.runtime.config import parse_config
    from pt2kit.runtime.flags import check_seconds

    check_seconds("--timeout", timeout)
    cfg = parse_config(config)
    kernels = _kernel_list(kernels_arg)
    mode = mode or ("names" if ima else "stats")
    package = target if target.endswith(".pt2") else None
    if package is not None:
        if jit:
            raise UsageError("--jit compiles a model file; a PACKAGE.pt2 is already AOT compiled")
        if not inputs:
            raise UsageError(f"{package}: a package needs inputs: --inputs FILE.py[:NAME]")
        if save_package is not None:
            raise UsageError(f"--save-package keeps the package compiled from a MODEL.py; {package} is one already")
        if not Path(package).is_file():
            raise ModelFileError(f"{package}: no such package")
        mode = _package_mode(s, package, mode)
        label = Path(package).name
        s.header(torch=torch_version(), device=device)
    else:
        if inputs:
            raise UsageError("--inputs goes with a PACKAGE.pt2; a model file brings its own example_inputs")
        if save_package is not None and (jit or not str(save_package).endswith(".pt2")):
            raise UsageError("--save-package PATH.pt2 keeps an AOTI package (not with --jit)")
        if save_package is not None:
            check_output("--save-package", save_package, [("the model file", str(parse_spec(target)[0]))])
        label = s.open_model(target, device=device)
    if ima and not device.startswith("cuda"):
        s.warn("--ima hunts CUDA illegal memory accesses; on the CPU it only runs launches one at a time")
    env = None
    if ima:
        env = {**os.environ, "CUDA_LAUNCH_BLOCKING": "1", "PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}
    with tempfile.TemporaryDirectory(prefix="aotiprint-") as tmp:
        from .job import Job

        job = Job(model=target, package=package, inputs=inputs, mode=mode, kernels=kernels, jit=jit, ima=ima,
                  device=device, config=cfg, label=label, emit_model=package is None,
                  log=os.path.join(tmp, "printer.log"), workdir=tmp)
        code = _run(s, job, env, timeout)
        if save_package is not None:
            _keep_package(s, Path(tmp) / "model.pt2", save_package)
        return code


def _keep_package(s: Session, built: Path, dest: Path) -> None:
    """The compiled package, moved from the worker's folder to --save-package through a rename; if it
    cannot be written there now, it stays in the store and stderr says where."""
    if not built.is_file():
        return  # the compile never finished: the crash record says at which stage
    data = built.read_bytes()
    try:
        write_output(dest, data)
    except OSError as e:
        s.warn(f"--save-package {dest}: cannot write it now ({e.strerror or e}); the package is in the store: "
               f"{s.store.path(s.store.put(data, 'application/zip', '.pt2'))}")


def _package_mode(s: Session, package: str, mode: str) -> str:
    from .wrapper import analyse, read_wrapper

    src = read_wrapper(package)
    if src is None:
        s.warn(f"{package}: no wrapper source inside; buffers before launch cannot be told from inputs")
        return mode
    built = analyse(src).modes
    if not built:
        raise UsageError(f"{package}: compiled without the intermediate value printer, so it prints nothing; "
                         "recompile with aot_inductor.debug_intermediate_value_printer=2, or give MODEL.py")
    if mode not in built:
        have = sorted(built)[0]
        s.warn(f"{package}: built with the printer in mode {have}, not {mode}; reading {have} "
               "(the mode is compiled in: give MODEL.py to change it)")
        return have
    return mode


def _run(s: Session, job: Any, env: dict[str, str] | None, timeout: float | None) -> int:
    import msgspec

    from pt2kit.schema import Kernel

    from .narrate import Narrator

    narrator = Narrator(s.say, job.label)
    streamed: list[Any] = []

    def on_record(raw: bytes) -> None:
        if raw.startswith(b'{"kind":"kernel"'):
            # held until the run ends: which launch is the finding depends on the outputs (held here,
            # in the parent, so a child that dies loses none of them)
            streamed.append(msgspec.json.decode(raw, type=Kernel))
        else:
            s.writer.forward(raw)

    res = s.run_child(job.label, "pt2kit.aotiprint.work:run", job, on_record=on_record, timeout=timeout, env=env)
    log = None
    if job.jit:
        records = _decided(streamed, res.value)
        for r in records:
            s.writer.emit(r)
        finding = next((r for r in records if r.finding), None)
    else:
        log, records, finding = _aoti_records(s, job, res)
    narrator.notes(records)
    if res.notes.get("hops"):
        s.say(f"{job.label}: {res.notes['hops']}")
    narrator.summary(records, finding, job.mode)
    wanted = job.kernels or []
    unmatched = [k for k in wanted if not any(r.name == k for r in records)]
    if unmatched and res.crash is None:
        s.warn(f"--kernels: no kernel named {', '.join(unmatched)} ran (names as the printer shows them; "
               "run without --kernels to see them)")
        if len(unmatched) == len(wanted):
            return EXIT_USAGE
    if res.crash is not None:
        crash = dict(res.crash)
        crash["last_kernel"] = crash.get("last_kernel") or _last_kernel(log, records)
        code = s.crash(job.label, crash)
        if crash.get("stage") == "load":
            # seen on torch 2.11: every AOTI package segfaults in its own container constructor
            s.say(f"{job.label}: the package compiled; loading it crashed in torch's AOTI runtime before any "
                  "kernel ran. --jit instruments the same model's kernels through torch.compile")
        return code
    if finding is not None:
        return EXIT_FINDINGS
    return EXIT_OK


def _aoti_records(s: Session, job: Any, res: Any) -> tuple[Any, list[Any], Any]:
    """(the parsed printer log, the `kernel` records written, the one marked as the finding)."""
    from pt2kit.schema import Kernel

    from .printer import parse_file
    from .records import from_printer
    from .wrapper import analyse, read_wrapper

    log = parse_file(job.log)
    package = job.package or res.notes.get("package")
    src = read_wrapper(package) if package else None
    wrapper = analyse(src) if src else None
    saved = (res.value or {}).get("saved") if res.value else None
    fields = _decided(from_printer(log, wrapper, res.notes.get("provenance") or {}, saved, job.kernels),
                      res.value)
    records = [s.emit(Kernel, model=job.label, **f.as_dict()) for f in fields]
    return log, records, next((r for r in records if r.finding), None)


def _decided(records: list[Any], value: dict[str, Any] | None) -> list[Any]:
    """The records with ``finding`` on the one launch :func:`.records.decide` names, notes on the
    launches whose NaN/Inf is information only, and no candidate left elsewhere."""
    from .records import decide

    value = value or {}
    i, kind, notes = decide(records, value.get("outputs_nonfinite"), value.get("eager_nonfinite"))
    for j, r in enumerate(records):
        r.finding = kind if j == i else None
        if j in notes:
            r.note = notes[j]
    return records


def _last_kernel(log: Any, records: list[Any]) -> str | None:
    """The launch the printer's output stops inside, else the last one it shows (AOTI), else the last record."""
    if log is not None:
        la = log.last_started
        if la is not None:
            return la.kernel
        if log.launches:
            return log.launches[-1].kernel
    return records[-1].name if records else None


def main() -> None:
    app()
