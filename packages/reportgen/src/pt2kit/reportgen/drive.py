"""reportgen's one call: read the streams, collect them, write the report (or the comparison).

-o is checked before anything is read (its directory, and that it is none of the inputs), and
written atomically, so a bad input leaves no page behind. With -o and stdout not a terminal, a
`header` and a `report` record go to stdout.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pt2kit.runtime.errors import EXIT_FINDINGS, EXIT_OK
from pt2kit.runtime.session import Session
from pt2kit.runtime.writes import check_output, write_output

from .job import Job

SUFFIXES = {".html": "html", ".htm": "html", ".json": "json", ".md": "md", ".txt": "text"}


def run(s: Session, job: Job) -> int:
    """The report ``job`` asks for, or with --compare the comparison: 1 when something regressed."""
    return comparison(s, job) if job.compare else report(s, job)


def report(s: Session, job: Job) -> int:
    from .collection import collect
    from .formats import render

    inputs = list(job.inputs) or ["-"]
    _check_output(job.output, inputs)
    fmt = job.fmt or _suffix_format(job.output, "html")
    c = collect(s.read(inputs, forward=False, hint="e.g. `fxcheck m.py | reportgen -o report.html`"))
    if c.unknown:
        s.warn("record kinds this version does not know, counted but not shown: "
               + ", ".join(f"{k} ({n})" for k, n in sorted(c.unknown.items())))
    if c.total == 0:
        s.warn("no records in the input: the report is empty")
    text = render(c, fmt, store=job.store, out_dir=job.output.parent if job.output else None,
                  title=job.title or "pt2kit report")
    _write(s, job.output, text, fmt, c.total, f"wrote {job.output} ({fmt}, {c.total} records)")
    return EXIT_OK


def comparison(s: Session, job: Job) -> int:
    from .collection import collect
    from .compare import compare, to_format

    before, after = job.inputs
    _check_output(job.output, [before, after])
    sides = [collect(s.read([x], forward=False, hint="e.g. `reportgen --compare before.ndjson after.ndjson`"))
             for x in (before, after)]
    cmp = compare(sides[0], sides[1], (before, after))
    fmt = job.fmt or _suffix_format(job.output, "text")
    text = to_format(cmp, fmt, job.title or "pt2kit comparison")
    s.say(f"{len(cmp.regressions)} regression(s) from {before} to {after}")
    _write(s, job.output, text, fmt, sides[0].total + sides[1].total, f"wrote {job.output} ({fmt})")
    return EXIT_FINDINGS if cmp.regressions else EXIT_OK


def _suffix_format(output: Path | None, default: str) -> str:
    return SUFFIXES.get(output.suffix.lower(), default) if output else default


def _write(s: Session, output: Path | None, text: str, fmt: str, records: int, said: str) -> None:
    """``text`` to stdout, or to ``output`` (then ``said`` on stderr and, when stdout is not a terminal,
    a header and a `report` record on stdout)."""
    if output is None:
        sys.stdout.write(text)
        return
    from pt2kit.schema import Report

    write_output(output, text)
    s.say(said)
    if not sys.stdout.isatty():
        s.header()
        s.emit(Report, path=str(output.absolute()), format=fmt, records=records)


def _check_output(output: Path | None, inputs: list[str]) -> None:
    """-o is checked before anything is read: its directory, and that it is none of the streams read."""
    from pt2kit.schema.stream import expand_sources

    if output is not None:
        check_output("-o", output, [("the input", x) for x in expand_sources(inputs)])
