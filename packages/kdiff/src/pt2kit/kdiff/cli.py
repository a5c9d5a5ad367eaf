"""kdiff [MODEL.py[:NAME]]: which outputs of a compiled model differ from a reference, by how much,
where, and at which aten op the compiled program first parts ways.

Writes a `diff` record per output leaf (pytree key path; with --grad also per parameter and input
gradient): max/mean abs error, max rel error, RMSE, mismatches, NaN/Inf on both sides, the worst
element's index and both values, the tolerances and the verdict (torch.testing.assert_close
semantics), with an error heatmap for each failing leaf. The verdict is PyTorch's accuracy rule
(torch._dynamo.utils.same): a leaf fails only when it fails assert_close against the reference *and*
is further from a float64 run of the model than eager is, so rounding noise passes on any device;
`--verdict close` (or an explicit --atol/--rtol) judges by assert_close alone. Both runs use PyTorch's
accuracy-harness settings (TF32 off, deterministic cuDNN, fallback_random); `--precision as-configured`
keeps the model's own and reports them, and a leaf that fails only with TF32 (or another such mode) on
passes with a note naming the mode and the op ("TF32 cuDNN in aten.convolution.default"). A difference that
follows a near-tie in a sort, top-k, argmax or NMS is named as such, not as a bug. When an output
fails, a `divergence` record names the first aten node that leaves tolerance, with the user's
file:line.

Without MODEL, reads records on stdin, forwards every line, and diffs each `model` record
(`fxcheck m.py | kdiff`). Exit 0 all pass, 1 any fail, 2 bad input, 3 a crash (a crash record).
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
    Precision,
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
from .job import Job, backend_of, verdict_of

REFS = ("eager", "eager64", "aot_eager", "inductor")

app = tool_app("kdiff", __doc__ or "")


@command(app)
def kdiff(
    model: Annotated[str | None, typer.Argument(metavar="[MODEL.py[:NAME]]", show_default=False)] = None,
    ref: Annotated[one_of(REFS), typer.Option("--ref", help="The reference: eager64 runs a float64 copy, to tell rounding noise from bugs."
                                     )] = "eager",
    backend: Annotated[str | None, typer.Option("--backend",
        metavar="BACKEND", show_default=False, help="The backend under test: any name torch registers (inductor, "
        "aot_eager, eager, cudagraphs, a TESTING_ONLY one, a third-party one), aoti (AOT Inductor), or FILE.py:NAME or "
        "module:attr (any torch.compile backend) [default: a piped record's script's backend, else inductor].")] = None,
    test: Annotated[str | None, typer.Option("--test", hidden=True, help="--backend's old name.")] = None,
    verdict: Annotated[one_of(("fp64", "close")) | None, typer.Option("--verdict",
        show_default=False,
        help="fp64: PyTorch's accuracy rule against a float64 run; close: assert_close against the reference alone "
        "[default: fp64, close when --atol/--rtol is given].")] = None,
    atol: Annotated[float | None, typer.Option("--atol", help="Absolute tolerance [default: assert_close's for the dtype].",
                                               show_default=False)] = None,
    rtol: Annotated[float | None, typer.Option("--rtol", help="Relative tolerance [default: assert_close's for the dtype].",
                                               show_default=False)] = None,
    equal_nan: Annotated[bool, typer.Option(
        "--equal-nan/--no-equal-nan", help="NaN on both sides (and the same ±Inf) agrees, as in PyTorch's benchmark "
        "harness; the model made it, and a passing leaf says so.")] = True,
    grad: Annotated[bool, typer.Option("--grad", help="Also compare parameter and input gradients; a failure in them "
                                       "alone is localised in the backward graph.")] = False,
    mode: Annotated[one_of(("infer", "train")) | None, typer.Option("--mode",
        show_default=False,
        help="train: run each side as a training step (train mode, loss = each floating output's mean, summed, "
        "backward), dropout drawn alike, and compare outputs and gradients [default: a piped model record's, "
        "else infer].")] = None,
    localize: Annotated[bool, typer.Option("--localize/--no-localize", help="When an output fails, find the first diverging aten node.")] = True,
    device: DeviceFromRecord = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed set before each run (-2**63 to 2**64-1, torch's range).")] = 0,
    precision: Precision = "harness",
    timeout: Timeout = None,
    config: Config = None,
    no_stream_config: NoStreamConfig = False,
    store: Store = None,
    quiet: Quiet = False,
    debug: Debug = False,
    version: Version = False,
) -> None:
    with Session("kdiff", __version__, store=store, quiet=quiet, debug=debug, precision=precision) as s:
        job = Job(model=model, device=device, config=parse_config(config), stream_config=not no_stream_config,
                  timeout=timeout, ref=ref, test=backend_of(backend, test), verdict=verdict_of(verdict, atol, rtol),
                  atol=atol, rtol=rtol, equal_nan=equal_nan, grad=grad, mode=mode, localize=localize, seed=seed, precision=precision)
        s.done(drive.run(s, job))


def main() -> None:
    app()
