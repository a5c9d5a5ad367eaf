"""reportgen [FILE|DIR|-]...: one self-contained page (or JSON, Markdown, text) from any records.

Reads any mix of streams (files, directories of *.ndjson/*.jsonl, or stdin), from any tools and
runs. The HTML page embeds its styles, plots and small blobs, links larger blobs by relative path,
and runs no script. Without -o the report goes to stdout. With -o the file is written atomically
(a bad input leaves no page behind; -o naming one of the inputs, or a missing directory, is refused
before anything is read) and, when stdout is not a terminal, a `header` and a `report`
record go to stdout. Exit 0 once the report is written, whatever it reports.

`reportgen --compare BEFORE AFTER` compares two runs of the same sweep or checks (two torch versions,
two config sets): benchmarks whose speedup intervals no longer overlap, accuracy statuses, new and
vanished findings, breaks, recompiles, crashes and NaN/Inf kernels, diffs that flipped. Text on
stdout by default (-o for html/json/md); exit 1 when something regressed, so it can gate CI.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pt2kit.runtime.parent.options import Debug, Quiet, Store, Version, command, one_of, tool_app
from pt2kit.runtime.parent.session import Session

from . import __version__, drive
from .job import Job

app = tool_app("reportgen", __doc__ or "")


@command(app)
def reportgen(
    inputs: Annotated[list[str] | None, typer.Argument(metavar="[FILE|DIR|-]...", show_default=False)] = None,
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", dir_okay=False, show_default=False, help="Write the report here.")] = None,
    fmt: Annotated[one_of(["html", "json", "md", "text"]) | None, typer.Option(
        "--format", show_default=False,
        help="Report format [default: from -o's suffix, else html].")] = None,
    title: Annotated[str | None, typer.Option("--title", help="The page's title.", show_default=False)] = None,
    compare: Annotated[bool, typer.Option(
        "--compare", help="Compare two runs, BEFORE AFTER (each a stream file, a directory of streams or -): "
        "benchmarks beyond their intervals, accuracy, findings, diffs, breaks, recompiles, crashes; exit 1 on a "
        "regression.")] = False,
    store: Store = None,
    quiet: Quiet = False,
    debug: Debug = False,
    version: Version = False,
) -> None:
    with Session("reportgen", __version__, store=store, quiet=quiet, debug=debug) as s:
        job = Job(inputs=tuple(inputs or ()), output=output, fmt=fmt, title=title, compare=compare, store=store)
        s.done(drive.run(s, job))


def main() -> None:
    app()
