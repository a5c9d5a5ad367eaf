"""reportgen's one call: read the streams, collect them, write the report (or the comparison).

-o is checked before anything is read (its directory, that it is none of the inputs nor a file of the
user's, and that its suffix names a format reportgen writes, never a stream's), and again when it is
written (against the files the streams name too: runtime.writes), atomically, so a bad input leaves no
page behind. With -o and stdout not a terminal, a `header` and a `report` record go to stdout.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import Any

from pt2kit.runtime.common.errors import EXIT_FINDINGS, EXIT_OK, UsageError
from pt2kit.runtime.parent.session import Session
from pt2kit.runtime.parent.writes import check_output, named_by, write_output

from .job import Job

SUFFIXES = {".html": "html", ".htm": "html", ".json": "json", ".md": "md", ".txt": "text"}


def run(s: Session, job: Job) -> int:
    """The report ``job`` asks for, or with --compare the comparison: 1 when something regressed."""
    return comparison(s, job) if job.compare else report(s, job)


def report(s: Session, job: Job) -> int:
    from .collection import collect
    from .formats import render

    inputs = list(job.inputs) or ["-"]
    fmt = _check_output(job.output, inputs, job.fmt, "html")
    c = collect(s.read(inputs, forward=False, hint="e.g. `fxcheck m.py | reportgen -o report.html`"))
    if c.unknown:
        s.warn("record kinds this version does not know, counted but not shown: "
               + ", ".join(f"{k} ({n})" for k, n in sorted(c.unknown.items())))
    if c.total == 0:
        s.warn("no records in the input: the report is empty")
    text = render(c, fmt, store=job.store, out_dir=job.output.parent if job.output else None,
                  title=job.title or "pt2kit report")
    _write(s, job.output, text, fmt, c.total, f"wrote {job.output} ({fmt}, {c.total} records)", [c])
    return EXIT_OK


def comparison(s: Session, job: Job) -> int:
    from .collection import collect
    from .compare import compare, to_format

    before, after = job.inputs
    fmt = _check_output(job.output, [before, after], job.fmt, "text")
    sides = [collect(s.read([x], forward=False, hint="e.g. `reportgen --compare before.ndjson after.ndjson`"))
             for x in (before, after)]
    cmp = compare(sides[0], sides[1], (before, after))
    text = to_format(cmp, fmt, job.title or "pt2kit comparison")
    s.say(f"{len(cmp.regressions)} regression(s) from {before} to {after}")
    _write(s, job.output, text, fmt, sides[0].total + sides[1].total, f"wrote {job.output} ({fmt})", sides)
    return EXIT_FINDINGS if cmp.regressions else EXIT_OK


def _write(s: Session, output: Path | None, text: str, fmt: str, records: int, said: str, read: list[Any]) -> None:
    """``text`` to stdout, or to ``output`` (then ``said`` on stderr and, when stdout is not a terminal,
    a header and a `report` record on stdout). The files the collections ``read`` name (a captured
    script, model files outside the store) are inputs the page may not land on."""
    if output is None:
        sys.stdout.write(text)
        return
    from pt2kit.schema import Report

    write_output(output, text, flag="-o", inputs=[x for c in read for m in c.of("model") for x in named_by(m)])
    s.say(said)
    if not sys.stdout.isatty():
        s.header()
        s.emit(Report, path=str(output.absolute()), format=fmt, records=records)


def _check_output(output: Path | None, inputs: list[str], fmt: str | None, default: str) -> str:
    """The format to write, once -o is checked, before anything is read: its directory, that it is none of
    the streams read, and that its name says a format reportgen writes. A report named like a stream
    (``.ndjson``, ``.jsonl``) is refused whatever --format says: every later `pt2kit ls`, `reportgen` or
    `gc` of its folder would read it as one and stop on it."""
    from pt2kit.schema.stream import STREAM_SUFFIXES, expand_sources

    if output is None:
        return fmt or default
    check_output("-o", output, [("the input", x) for x in expand_sources(inputs)])
    suffix = output.suffix.lower()
    named = SUFFIXES.get(suffix)
    writes = ", ".join(SUFFIXES)
    if suffix in STREAM_SUFFIXES:
        raise UsageError(f"-o {output}: {suffix} names a record stream, and a report is not one (pt2kit ls, "
                         f"reportgen and gc read a folder's {suffix} files as streams); name it {writes}")
    if fmt is None and named is None and not _device(output):
        raise UsageError(f"-o {output}: reportgen writes {writes}, and {suffix or 'no suffix'} names none of them; "
                         "name the file so, or give --format")
    if fmt is not None and named is not None and named != fmt:
        raise UsageError(f"-o {output}: its suffix says {named}, but --format {fmt}; make them agree")
    return fmt or named or default


def _device(path: Path) -> bool:
    """Whether ``path`` is something other than a regular file the user named (/dev/stdout, a FIFO)."""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False
