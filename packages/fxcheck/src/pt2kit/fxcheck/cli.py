"""fxcheck MODEL.py: capture every graph a model compiles to and check it against a profile.

Writes a `header`, the `model` record (so `| kdiff` can load the same model), one `graph` record
per captured graph (Dynamo FX; AOT forward and backward aten; with --inductor the generated code and
its kernels) and one `violation` per finding, each with the aten op, node, phase, dtype and shape,
the user's file:line and the nn.Module path. Like a linter, it exits 1 when it finds anything
(--exit-zero for 0); a graph it could not capture is never a clean bill (exit 1 with an `error`
record). A profile's `strict` keeps its library meaning: `fxcheck.backend(...)` raises on findings.
"""

from __future__ import annotations

from typing import Annotated, Any

import click
import typer

from pt2kit.runtime.errors import EXIT_FINDINGS, EXIT_OK
from pt2kit.runtime.flags import check_range, check_seconds
from pt2kit.runtime.options import Config, Debug, Device, Quiet, Store, Timeout, Version, command, tool_app
from pt2kit.runtime.session import Session

from . import __version__

app = tool_app("fxcheck", __doc__ or "")


@command(app)
def fxcheck(
    model: Annotated[str, typer.Argument(metavar="MODEL.py[:NAME]", show_default=False)],
    profile: Annotated[str | None, typer.Option(
        metavar="NAME|FILE.toml", show_default=False,
        help="Capability profile: a shipped name (float32-only, npu-bf16, no-conv, mock-peer) or a TOML file.")] = None,
    dtypes: Annotated[str | None, typer.Option(metavar="D1,D2", show_default=False,
                                               help="Allowed dtypes, e.g. float32,bfloat16.")] = None,
    align: Annotated[int | None, typer.Option(metavar="N", show_default=False,
                                              help="Dimensions of size > 1 must be multiples of N.")] = None,
    align_min_size: Annotated[int | None, typer.Option(metavar="N", show_default=False,
                                                       help="Exempt dimensions smaller than N [default: 2].")] = None,
    align_scope: Annotated[str | None, typer.Option(
        click_type=click.Choice(("tiled", "all")), show_default=False,
        help="tiled: the tensors hardware tiles (activations, so GEMM M/N/K and conv channels), not parameters or "
        "conv kernels' spatial dims; all: every dimension of every tensor [default: tiled].")] = None,
    max_tensor_bytes: Annotated[str | None, typer.Option(
        metavar="BYTES", show_default=False, help="Largest materialised tensor, e.g. 67108864 or 64MiB.")] = None,
    contiguous: Annotated[bool | None, typer.Option(
        "--contiguous/--no-contiguous", show_default=False, help="Compute ops must receive contiguous tensors.")] = None,
    deny: Annotated[list[str] | None, typer.Option(
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
    device: Device = "cpu",
    config: Config = None,
    store: Store = None,
    quiet: Quiet = False,
    debug: Debug = False,
    version: Version = False,
) -> None:
    s = Session("fxcheck", __version__, store=store, quiet=quiet, debug=debug)
    s.run(lambda: _work(s, model, profile, dict(
        dtypes=dtypes, align=align, align_min_size=align_min_size, align_scope=align_scope, max_tensor_bytes=max_tensor_bytes,
        contiguous=contiguous, deny=list(deny or ()) or None, strict=strict, backward=backward,
    ), inductor, timeout, device, tuple(config or ()), exit_zero))


def _work(s: Session, model: str, profile_arg: str | None, flags: dict[str, Any], inductor: bool,
          timeout: float | None, device: str, config: tuple[str, ...], exit_zero: bool = False) -> int:
    from pt2kit.runtime.config import parse_config

    from .profiles import parse_bytes, parse_dtypes, resolve

    check_seconds("--timeout", timeout)
    check_range("--align-min-size", flags["align_min_size"], 0)
    if flags["dtypes"] is not None:
        flags["dtypes"] = parse_dtypes(flags["dtypes"], "--dtypes")
    if flags["max_tensor_bytes"] is not None:
        flags["max_tensor_bytes"] = parse_bytes(flags["max_tensor_bytes"], "--max-tensor-bytes")
    prof = resolve(profile_arg, flags)
    cfg = parse_config(list(config))
    label = s.open_model(model, device=device)
    from .job import Job
    from .narrate import Narrator

    narrator = Narrator(s.say)

    def on_record(raw: bytes) -> None:
        s.writer.forward(raw)
        narrator.record(raw)

    job = Job(model=model, device=device, config=cfg, profile=prof, backward=bool(prof.backward), inductor=inductor)
    res = s.run_child(label, "pt2kit.fxcheck.work:run", job, on_record=on_record, timeout=timeout)
    if res.crash is not None:
        return s.crash(label, res.crash)
    narrator.summary(res.value["graphs"], exit_zero=exit_zero)
    found = narrator.findings or narrator.errors  # a graph that could not be checked is no clean bill
    return EXIT_FINDINGS if found and not exit_zero else EXIT_OK


def main() -> None:
    app()
