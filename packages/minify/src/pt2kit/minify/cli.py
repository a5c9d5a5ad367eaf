"""minify [MODEL.py[:NAME]]: the smallest standalone repro.py of a torch.compile failure.

Decides once, from the original run, what "still fails" means (an exception's type and normalised
message, the signal that killed the process, an accuracy failure by kdiff's float64-aware verdict,
NaN/Inf in the compiled output, a constraint and op, eager's error where the compiled side returns), then shrinks the forward aten graph (with
--mode train, a failure of the backward: the backward graph, its saved values fed in, else the model's
graph run as a training step; accuracy: from kdiff's first diverging op; else truncation, prefix cut
and delta debugging), the input shapes and the --config set, judging every candidate by that signature in warm worker processes
(--jobs in parallel; one that dies is replaced, and its death is a signature like any other).
The repro runs with torch alone, exits 1 while the bug is present and 0 once it is fixed; minify
runs it 3 times in fresh processes and writes a `repro` record (the file in the store, and -o); then
finds which compiler stage breaks it (eager, aot_eager, aot_eager_decomp_partition, Inductor; the
subsystem and its application, or the config change, with PyTorch's compiler_bisector switches, checked
off and on) and writes a `bisect` record (--no-bisect: not).

Without MODEL, reads records on stdin, forwards every line, and minifies each model's first failure
of each kind: a failing `diff` (a gradient's `grad.*` runs in train mode; one whose reference raised, a missing error), a `crash`, a `violation`, a `kernel` with a NaN/Inf finding
(`kdiff m.py | minify`, `fxcheck m.py --deny aten.convolution | minify`).
Exit 1 a repro was made and reproduces, 0 no failure to minify, 2 bad input, 3 the failure could not
be re-created or reduced (the message says why).
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

from . import __version__
from .job import Job, parse_jobs, violation_profile
from .parent import drive

FAILURES = ("auto", "compile-error", "crash", "accuracy", "nan", "violation", "missing-error")

app = tool_app("minify", __doc__ or "")


@command(app)
def minify(
    model: Annotated[str | None, typer.Argument(metavar="[MODEL.py[:NAME]]", show_default=False)] = None,
    failure: Annotated[one_of(FAILURES), typer.Option("--failure", help="The failure to keep; auto takes what the original run shows.")] = "auto",
    backend: Annotated[str | None, typer.Option("--backend", metavar="BACKEND", show_default=False,
        help="Any name torch registers (inductor, aot_eager, cudagraphs, a TESTING_ONLY one, a third-party one), aoti "
        "(export, package, load, run) or FILE.py:NAME [default: a piped record's script's backend, else inductor]."
                                                )] = None,
    ref: Annotated[one_of(("eager", "eager64")), typer.Option("--ref", help="Accuracy: the reference the compiled output is held against (eager64: a "
                                     "float64 run; a stream's diff brings its own).")] = "eager",
    deny: Annotated[str | None, typer.Option("--deny", metavar="OP", help="Keep a violation: the aten op (aten.convolution) "
                                             "must stay in the graph.", show_default=False)] = None,
    profile: Annotated[str | None, typer.Option("--profile",
        metavar="NAME|FILE.toml", show_default=False,
        help="Keep the first violation fxcheck's checks find under this capability profile.")] = None,
    align: Annotated[int | None, typer.Option("--align", metavar="N", show_default=False,
                                              help="fxcheck's --align: keep an op whose output is no multiple of N.")
                     ] = None,
    dtypes: Annotated[str | None, typer.Option("--dtypes", metavar="D1,D2", show_default=False,
                                               help="fxcheck's --dtypes: keep an op of a dtype not allowed.")] = None,
    check_str: Annotated[str | None, typer.Option("--check-str", help="An error counts only if its message holds TEXT.",
                                                  metavar="TEXT", show_default=False)] = None,
    jobs: Annotated[str, typer.Option("--jobs", "-j", metavar="N|auto", help="Worker processes judging candidates in "
                                      "parallel; auto: half the CPUs, at most 4. Never more than the CPUs and "
                                      "memory serve (capped, with a warning).")] = "auto",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Also write the repro here (never over an "
                                                "input: the model, the stream, a backend or profile file).",
                                                show_default=False)] = None,
    mode: Annotated[one_of(("infer", "train")) | None, typer.Option("--mode", show_default=False,
                                             help="train: run the model as a training step (forward, loss, backward) "
                                             "and minify failures of its backward too; default: a piped model "
                                             "record's, else infer.")] = None,
    no_bisect: Annotated[bool, typer.Option("--no-bisect", help="Do not bisect the repro: by default minify then "
                                            "finds which compiler stage breaks it (PyTorch's compiler_bisector "
                                            "switches on the repro's graph) and says it in a bisect record and the "
                                            "repro's docstring.")] = False,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the model's run and of the repro's inputs (-2**63 to "
                                      "2**64-1, torch's range).")] = 0,
    precision: Precision = "harness",
    device: DeviceFromRecord = None,
    timeout: Timeout = None,
    config: Config = None,
    no_stream_config: NoStreamConfig = False,
    store: Store = None,
    quiet: Quiet = False,
    debug: Debug = False,
    version: Version = False,
) -> None:
    with Session("minify", __version__, store=store, quiet=quiet, debug=debug, precision=precision) as s:
        job = Job(model=model, device=device, config=parse_config(config), stream_config=not no_stream_config,
                  timeout=timeout, failure=failure, backend=backend, seed=seed, ref=ref, precision=precision,
                  deny=deny, profile=violation_profile(profile=profile, align=align, dtypes=dtypes, deny=deny),
                  profile_name=profile, check_str=check_str, jobs=parse_jobs(jobs),
                  output=None if output is None else str(output), mode=mode, bisect=not no_bisect)
        s.done(drive.run(s, job))


def main() -> None:
    app()
