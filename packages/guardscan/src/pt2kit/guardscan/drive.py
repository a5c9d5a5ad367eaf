"""guardscan's parent side: a model (given, or each one piped) scanned in a worker, or a TORCH_TRACE
directory read right here (reading a trace imports no torch and runs no code).

Guarantees: a trace directory's findings are written and narrated exactly as a live run's are (the
same :func:`~pt2kit.guardscan.records.emit_findings`, the same narrator, fed each record as the Struct
it wrote); each log file of the directory is one process, with its own summary line; a directory that
cannot be read is exit 2 before the header. Not guaranteed: that a trace torch wrote while crashing
holds every event of the run (what is there is read; the rest is not guessed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pt2kit.runtime.errors import EXIT_OK, UsageError
from pt2kit.runtime.session import Session, torch_version

from .job import Job
from .narrate import Narrator

HINT = "give a MODEL.py, --trace DIR, or pipe records: `fxcheck m.py | guardscan`"


def run(s: Session, job: Job) -> int:
    """Scan ``job``'s model (or each piped one) in a worker, or read its ``--trace``: the worst exit code."""
    if job.trace is None:
        return s.each_model(job, target="pt2kit.guardscan.work:run", narrator=Narrator, hint=HINT)
    return _trace(s, Path(job.trace), job)


class _Narrated:
    """emit_findings's ``emit`` for a trace: each record written to stdout, then narrated as its Struct."""

    def __init__(self, s: Session, narrator: Narrator) -> None:
        self.s, self.narrator = s, narrator

    def __call__(self, cls: Any, **fields: Any) -> Any:
        rec = self.s.emit(cls, **fields)
        self.narrator.on(rec)
        return rec


def _trace(s: Session, trace_dir: Path, job: Job) -> int:
    from .findings import analyze
    from .records import emit_findings
    from .tracelog import read_trace

    try:
        traces = read_trace(trace_dir)
    except (FileNotFoundError, OSError) as e:
        raise UsageError(str(e).splitlines()[0]) from None
    s.header(torch=torch_version())
    code = EXIT_OK
    for path, trace in traces:
        narrator = Narrator(s.say, path.name, job)
        counts = emit_findings(analyze(trace), _Narrated(s, narrator), s.store, model=path.name)
        if not trace.events:
            s.warn(f"{path}: no structured trace events in it")
        code = max(code, narrator.finish(counts, {}))
    return code
