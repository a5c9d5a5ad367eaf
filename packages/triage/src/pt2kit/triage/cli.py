"""pt2kit triage [--out DIR] -- COMMAND [ARGS...]: from a failing script to a bug report, in one command.
pt2kit triage [--out DIR] --from FILE: the same from records pt2kit capture wrote before (a notebook's block).

Runs your command under `pt2kit capture`, then its records through guardscan (graph breaks, recompiles),
kdiff (compiled vs eager, when graphs were captured and none crashed), minify (the smallest repro.py of
each failure) and reportgen, each as the tool it is, reading the stream the step before wrote: the same
pipeline you could type by hand, each step's command said on stderr before it runs. Everything lands in
one folder (--out, new or empty; default a fresh ./triage-N): report.html, repro.py, a stream per step
(capture.ndjson, guardscan.ndjson, ...), the store, and bug-report.md: a title, what fails and where in
your code, the repro inline, the bisection, the error, the versions (as collect_env names them, read in
your script's interpreter), the non-default config and each step's command to run it again.

--from FILE: no command runs; FILE (pt2kit capture's stream: `capture --out FILE`, or `cap.write(FILE)` of a
block captured in process, which `cap.triage()` hands over) is copied into the folder as capture.ndjson and
the steps after capture run on it (kdiff not again where FILE holds its verdict on every graph: `kdiff <
capture.ndjson > FILE`, a notebook's `cap.kdiff()`); bug-report.md says where the records came from and
that there is no command to run again (the repro stands alone).

Your command's stdout stays on stdout and its stderr on stderr. A backend that is code in your script
(FILE.py:NAME) is handed to kdiff and minify with --backend FILE.py:NAME, and an Inductor pass your script
set (post_grad_custom_post_pass = FILE.py:NAME) with --config KEY=FILE.py:NAME, said on stderr and in their
commands. Ctrl-C stops the step running as that tool stops; what was written stays in the folder.

Exit: the most severe step's: 3 a crash (a tool's or the compiler's, or your command's that no tool
reproduced), then 1 a finding (a failure reproduced, a graph break), then 2 bad input (a folder that holds
files, no command, a step that refused its input: a bug found stays the answer), then 0 nothing found;
130 interrupted.
"""

from __future__ import annotations

from typing import Annotated

import typer

from pt2kit.runtime.parent.options import Debug, Quiet, Store, Version, command, tool_app
from pt2kit.runtime.parent.session import Session

from . import __version__, drive
from .job import Job

NAME = "pt2kit triage"

app = tool_app(NAME, __doc__ or "")


@command(app, name=NAME, help=__doc__)
def triage(
    cmd: Annotated[list[str] | None, typer.Argument(metavar="-- COMMAND [ARGS...]", show_default=False)] = None,
    stream: Annotated[str | None, typer.Option("--from", metavar="FILE", show_default=False,
        help="Start from records pt2kit capture wrote (capture --out FILE, a notebook's cap.write(FILE)) instead "
             "of a command: no command runs; the steps after capture run on them.")] = None,
    out: Annotated[str | None, typer.Option("--out", metavar="DIR", show_default=False,
        help="The folder to write, new or empty [default: a fresh ./triage-N].")] = None,
    timeout: Annotated[float | None, typer.Option("--timeout", metavar="SECONDS", show_default=False,
        help="Each step's --timeout: capture stops your command's tree past it; kdiff and minify a model.")] = None,
    store: Store = None,
    quiet: Quiet = False,
    debug: Debug = False,
    version: Version = False,
) -> None:
    # its records go into the folder; stdout is the command's
    with Session("triage", __version__, store=store, quiet=quiet, debug=debug, records_on_stdout=False) as s:
        job = Job(command=cmd or [], stream=stream, out=out, store=str(store) if store else None, timeout=timeout)
        s.done(drive.run(s, job))


def main(args: list[str] | None = None) -> None:
    app(args=args, prog_name=NAME)
