"""fxcheck [MODEL.py]: capture every graph a model compiles to and check it against a profile.

Writes a `header`, the `model` record (so `| kdiff` can load the same model), one `graph` record
per captured graph (Dynamo FX; AOT forward and backward aten; with --inductor the generated code and
its kernels) and one `violation` per finding, each with the aten op, node, phase, dtype and shape,
the user's file:line and the nn.Module path. Like a linter, it exits 1 when it finds anything
(--exit-zero for 0); a graph it could not capture is never a clean bill (exit 1 with an `error`
record). A profile's `strict` keeps its library meaning: `fxcheck.backend(...)` raises on findings.

Without MODEL, reads records on stdin, forwards every line, and checks each `model` record
(`pt2kit capture -- python train.py | fxcheck --profile npu-bf16`: every graph the script compiled).
"""

from __future__ import annotations

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
    one_of,
    tool_app,
)
from pt2kit.runtime.parent.session import Session

from . import __version__
from .job import Job, ProfileFlags
from .narrate import Narrator
from .profiles import parse_bytes, parse_dtypes, resolve

HINT = "give a MODEL.py, or pipe records: `pt2kit capture -- python train.py | fxcheck`"

app = tool_app("fxcheck", __doc__ or "")


@command(app)
def fxcheck(
    model: Annotated[str | None, typer.Argument(metavar="[MODEL.py[:NAME]]", show_default=False)] = None,
    profile: Annotated[str | None, typer.Option("--profile",
        metavar="NAME|FILE.toml", show_default=False,
        help="Capability profile: a shipped name (float32-only, npu-bf16, no-conv, mock-peer) or a TOML file.")] = None,
    dtypes: Annotated[str | None, typer.Option("--dtypes", metavar="D1,D2", show_default=False,
                                               help="Allowed dtypes, e.g. float32,bfloat16.")] = None,
    align: Annotated[int | None, typer.Option("--align", metavar="N", show_default=False,
                                              help="Dimensions of size > 1 must be multiples of N.")] = None,
    align_min_size: Annotated[int | None, typer.Option("--align-min-size", metavar="N", show_default=False,
                                                       help="Exempt dimensions smaller than N [default: 2].")] = None,
    align_scope: Annotated[one_of(("tiled", "all")) | None, typer.Option("--align-scope",
        show_default=False,
        help="tiled: the tensors hardware tiles (activations, so GEMM M/N/K and conv channels), not parameters or "
        "conv kernels' spatial dims; all: every dimension of every tensor [default: tiled].")] = None,
    max_tensor_bytes: Annotated[str | None, typer.Option("--max-tensor-bytes",
        metavar="BYTES", show_default=False, help="Largest materialised tensor, e.g. 67108864 or 64MiB.")] = None,
    contiguous: Annotated[bool | None, typer.Option(
        "--contiguous/--no-contiguous", show_default=False, help="Compute ops must receive contiguous tensors.")] = None,
    deny: Annotated[list[str] | None, typer.Option("--deny",
        metavar="OP", show_default=False, help="Deny an aten op or overload, e.g. aten.convolution. Repeatable.")] = None,
    exit_zero: Annotated[bool, typer.Option(
        "--exit-zero", help="Exit 0 even when something is found (findings are still reported).")] = False,
    strict: Annotated[bool | None, typer.Option(
        "--strict/--no-strict", show_default=False, hidden=True,
        help="Kept for old scripts: fxcheck exits 1 on findings anyway.")] = None,
    backward: Annotated[bool | None, typer.Option(
        "--backward/--no-backward", show_default=False, help="Also capture and check the backward graphs.")] = None,
    inductor: Annotated[bool, typer.Option(
        "--inductor", help="Also record the code Inductor generates for this compile, kernel by kernel.")] = False,
    timeout: Timeout = None,
    device: DeviceFromRecord = None,
    config: Config = None,
    no_stream_config: NoStreamConfig = False,
    store: Store = None,
    quiet: Quiet = False,
    debug: Debug = False,
    version: Version = False,
) -> None:
    with Session("fxcheck", __version__, store=store, quiet=quiet, debug=debug) as s:
        flags = ProfileFlags(
            dtypes=None if dtypes is None else parse_dtypes(dtypes, "--dtypes"), align=align,
            align_min_size=align_min_size, align_scope=align_scope, contiguous=contiguous, deny=deny or None,
            max_tensor_bytes=None if max_tensor_bytes is None else parse_bytes(max_tensor_bytes, "--max-tensor-bytes"),
            strict=strict, backward=backward)
        job = Job(model=model, device=device, config=parse_config(config), stream_config=not no_stream_config,
                  timeout=timeout,
                  profile=resolve(profile, flags), inductor=inductor, exit_zero=exit_zero)
        s.done(s.each_model(job, target="pt2kit.fxcheck.work:run", narrator=Narrator, hint=HINT))


def main() -> None:
    app()
