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

import sys
from pathlib import Path
from typing import Annotated

import click
import typer

from pt2kit.runtime.errors import EXIT_FINDINGS, UsageError
from pt2kit.runtime.options import Debug, Quiet, Store, Version, command, tool_app
from pt2kit.runtime.session import Session
from pt2kit.runtime.writes import check_output, write_output

from . import __version__

app = tool_app("reportgen", __doc__ or "")


@command(app)
def reportgen(
    inputs: Annotated[list[str] | None, typer.Argument(metavar="[FILE|DIR|-]...", show_default=False)] = None,
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", dir_okay=False, show_default=False, help="Write the report here.")] = None,
    fmt: Annotated[str | None, typer.Option(
        "--format", click_type=click.Choice(["html", "json", "md", "text"]), show_default=False,
        help="Report format [default: from -o's suffix, else html].")] = None,
    title: Annotated[str | None, typer.Option(help="The page's title.", show_default=False)] = None,
    compare: Annotated[bool, typer.Option(
        "--compare", help="Compare two runs, BEFORE AFTER (each a stream file, a directory of streams or -): "
        "benchmarks beyond their intervals, accuracy, findings, diffs, breaks, recompiles, crashes; exit 1 on a "
        "regression.")] = False,
    store: Store = None,
    quiet: Quiet = False,
    debug: Debug = False,
    version: Version = False,
) -> None:
    s = Session("reportgen", __version__, store=store, quiet=quiet, debug=debug)
    if compare:
        s.run(lambda: _compare(s, list(inputs or ()), output, fmt, title or "pt2kit comparison"))
    s.run(lambda: _work(s, list(inputs or ()), output, fmt, title or "pt2kit report", store))


SUFFIXES = {".html": "html", ".htm": "html", ".json": "json", ".md": "md", ".txt": "text"}


def _work(s: Session, inputs: list[str], output: Path | None, fmt: str | None, title: str, store: Path | None) -> int:
    from pt2kit.schema import Report

    from .collect import collect
    from .render import render

    _check_output(output, inputs or ["-"])
    fmt = fmt or (SUFFIXES.get(output.suffix.lower(), "html") if output else "html")
    c = collect(s.read(inputs or ["-"], forward=False, hint="e.g. `fxcheck m.py | reportgen -o report.html`"))
    if c.unknown:
        s.warn("record kinds this version does not know, counted but not shown: "
               + ", ".join(f"{k} ({n})" for k, n in sorted(c.unknown.items())))
    if c.total == 0:
        s.warn("no records in the input: the report is empty")
    text = render(c, fmt, store=store, out_dir=output.parent if output else None, title=title)
    if output is None:
        sys.stdout.write(text)
        return 0
    write_output(output, text)
    s.say(f"wrote {output} ({fmt}, {c.total} records)")
    if not sys.stdout.isatty():
        s.header()
        s.emit(Report, path=str(output.absolute()), format=fmt, records=c.total)
    return 0


def _compare(s: Session, inputs: list[str], output: Path | None, fmt: str | None, title: str) -> int:
    from pt2kit.schema import Report

    from .collect import collect
    from .compare import compare, to_html, to_json, to_text

    if len(inputs) != 2:
        raise UsageError(f"--compare takes two runs, BEFORE AFTER; got {len(inputs)} input(s)")
    if inputs.count("-") > 1:
        raise UsageError("--compare: only one side can be stdin")
    _check_output(output, inputs)
    sides = [collect(s.read([x], forward=False, hint="e.g. `reportgen --compare before.ndjson after.ndjson`"))
             for x in inputs]
    cmp = compare(sides[0], sides[1], (inputs[0], inputs[1]))
    fmt = fmt or (SUFFIXES.get(output.suffix.lower(), "text") if output else "text")
    text = {"html": lambda: to_html(cmp, title), "json": lambda: to_json(cmp), "md": lambda: to_text(cmp, markdown=True),
            "text": lambda: to_text(cmp)}[fmt]()
    code = EXIT_FINDINGS if cmp.regressions else 0
    s.say(f"{len(cmp.regressions)} regression(s) from {inputs[0]} to {inputs[1]}")
    if output is None:
        sys.stdout.write(text)
        return code
    write_output(output, text)
    s.say(f"wrote {output} ({fmt})")
    if not sys.stdout.isatty():
        s.header()
        s.emit(Report, path=str(output.absolute()), format=fmt, records=sides[0].total + sides[1].total)
    return code


def _check_output(output: Path | None, inputs: list[str]) -> None:
    """-o is checked before anything is read: its directory, and that it is none of the streams read."""
    from pt2kit.schema.stream import expand_sources

    if output is not None:
        check_output("-o", output, [("the input", x) for x in expand_sources(inputs)])


def main() -> None:
    app()
