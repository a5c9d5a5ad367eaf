"""aotiprint MODEL.py[:NAME] | PACKAGE.pt2 --inputs FILE.py[:NAME]: per-kernel intermediate values of
AOT Inductor (default) or JIT Inductor (--jit), as `kernel` records; the first kernel that makes NaN or
Inf; the kernel a crash happened in.

AOTI: exports the model, compiles it with aoti_compile_and_package and the intermediate value
printer on (--detail names: launch order only; stats: every argument's numel, dtype, shape, stride,
mean, min, max, NaN/Inf counts; save: every argument saved into the store, one file per launch and
argument), loads and runs it in a child process, and turns the printer's output into one `kernel`
record per launch and side (before/after). Output buffers before their launch are marked
uninitialised, never findings. --kernels keeps the named kernels only.

--jit: torch.compile with Inductor, every launch of the generated Python wrapper instrumented
(C++, Triton and extern kernels alike), with one-pass statistics.

--ima (CUDA illegal memory access): blocking launches, the caching allocator off, kernel names
only unless --detail says otherwise; the crash record names the last kernel launched.

Exit 0 clean, 1 NaN/Inf found, 2 bad input, 3 crash (a `crash` record says at which stage:
load model, export, compile, load, run).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pt2kit.runtime.common.config import parse_config
from pt2kit.runtime.parent.options import (
    Config,
    Debug,
    Device,
    Quiet,
    Store,
    Timeout,
    Version,
    command,
    one_of,
    tool_app,
)
from pt2kit.runtime.parent.session import Session

from . import __version__, drive
from .job import DETAILS, Job, detail_of, kernel_list

app = tool_app("aotiprint", __doc__ or "")


@command(app)
def aotiprint(
    target: Annotated[str, typer.Argument(metavar="MODEL.py[:NAME] | PACKAGE.pt2", show_default=False)],
    detail: Annotated[one_of(DETAILS) | None, typer.Option("--detail",
        show_default=False,
        help="What the printer records [default: stats; names with --ima].")] = None,
    mode: Annotated[one_of(DETAILS) | None, typer.Option(
        "--mode", hidden=True, help="--detail's old name.")] = None,
    kernels: Annotated[str | None, typer.Option("--kernels",
        metavar="K1,K2", show_default=False, help="Only these kernels (names as the printer shows them).")] = None,
    jit: Annotated[bool, typer.Option(
        "--jit", help="JIT Inductor (torch.compile) with our own per-kernel probes, not AOTI.")] = False,
    ima: Annotated[bool, typer.Option(
        "--ima", help="Hunt a CUDA illegal memory access: blocking launches, no caching allocator.")] = False,
    inputs: Annotated[str | None, typer.Option("--inputs",
        metavar="FILE.py[:NAME]", show_default=False,
        help="Inputs for a PACKAGE.pt2: example_inputs, or NAME (a tuple/dict, or a function returning one).")] = None,
    save_package: Annotated[Path | None, typer.Option("--save-package",
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
    with Session("aotiprint", __version__, store=store, quiet=quiet, debug=debug) as s:
        job = Job(model=target, device=device, config=parse_config(config), timeout=timeout,
                  detail=detail_of(detail, mode, ima), kernels=kernel_list(kernels), jit=jit,
                  ima=ima, inputs=inputs, save_package=None if save_package is None else str(save_package))
        s.done(drive.run(s, job))


def main() -> None:
    app()
