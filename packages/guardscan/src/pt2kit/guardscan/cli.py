"""guardscan [MODEL.py[:NAME]] | --trace DIR: graph breaks, guards and recompilations of torch.compile,
with the user's lines and what to change.

Compiles the model, calls it with its example inputs, then with variants that provoke recompiles:
by default dim 0 of every tensor input doubled, then halved; --vary adds more. Writes a `graph` per
compiled frame, a `graph_break` per break (reason, call, file:line, torch's GB id), every `guard`
of every compile, a `recompile` per recompile (the failing guard, its line, the input change; the
one recompile automatic dynamic shapes make per dimension is marked expected), a `variant` per call
(reused a graph or recompiled) and `advice` with the concrete change.

--trace DIR reads a TORCH_TRACE directory (what tlparse reads) instead of running anything.
Without MODEL or --trace, scans each `model` record on stdin (`fxcheck m.py | guardscan`); the graphs
`pt2kit capture -- python train.py` took are read from the script's trace it kept, not run.
Exit 0 nothing found, 1 graph breaks or unexpected recompiles, 2 bad input, 3 a crash.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pt2kit.runtime.common.config import parse_config
from pt2kit.runtime.parent.options import (
    Config,
    Debug,
    DeviceFromRecord,
    NoStreamConfig,
    Quiet,
    Store,
    Timeout,
    Version,
    command,
    tool_app,
)
from pt2kit.runtime.parent.session import Session

from . import __version__, drive
from .job import Job

app = tool_app("guardscan", __doc__ or "")


@command(app)
def guardscan(
    model: Annotated[str | None, typer.Argument(metavar="[MODEL.py[:NAME]]", show_default=False)] = None,
    trace_dir: Annotated[Path | None, typer.Option(
        "--trace", metavar="DIR", show_default=False,
        help="Read a TORCH_TRACE directory (or one of its logs) instead of running a model.")] = None,
    vary: Annotated[list[str] | None, typer.Option(
        "--vary", metavar="SPEC", show_default=False,
        help="Also call with changed inputs: [INPUT:]KEY=VALUE[,...], KEY a dim number, dtype, device or "
        "requires_grad; e.g. 0=16, x:1=32, dtype=float16. Repeatable.")] = None,
    default_vary: Annotated[bool, typer.Option("--default-vary/--no-default-vary",
        help="Call with dim 0 of every tensor input doubled, then halved.")] = True,
    dynamic: Annotated[bool | None, typer.Option(
        "--dynamic/--no-dynamic", show_default=False,
        help="torch.compile(dynamic=True/False) [default: automatic dynamic shapes].")] = None,
    recompile_limit: Annotated[int | None, typer.Option("--recompile-limit",
        min=1, metavar="N", show_default=False,
        help="torch._dynamo.config.recompile_limit for the run [default: torch's, 8].")] = None,
    backend: Annotated[str, typer.Option("--backend",
        help="torch.compile backend (eager, aot_eager, inductor): breaks and guards are Dynamo's, "
        "so eager is the fastest way to see them.")] = "eager",
    device: DeviceFromRecord = None,
    timeout: Timeout = None,
    config: Config = None,
    no_stream_config: NoStreamConfig = False,
    store: Store = None,
    quiet: Quiet = False,
    debug: Debug = False,
    version: Version = False,
) -> None:
    with Session("guardscan", __version__, store=store, quiet=quiet, debug=debug) as s:
        job = Job(model=model, trace=None if trace_dir is None else str(trace_dir), device=device,
                  config=parse_config(config), stream_config=not no_stream_config, timeout=timeout, vary=vary or [],
                  default_vary=default_vary, dynamic=dynamic, recompile_limit=recompile_limit, backend=backend)
        s.done(drive.run(s, job))


def main() -> None:
    app()
