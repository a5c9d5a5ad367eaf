"""guardscan's parent side: a model (given, or each one piped) scanned in a worker, or a TORCH_TRACE
directory read right here (reading a trace imports no torch and runs no code).

Guarantees: a trace directory's findings are written and narrated exactly as a live run's are (the
same :func:`~pt2kit.guardscan.records.emit_findings`, the same narrator, fed each record as the Struct
it wrote); each log file of the directory is one process, with its own summary line; a directory that
cannot be read is exit 2 before the header. A piped graph that ``pt2kit capture`` took from a script
(its record's ``captured.trace``) is not run: the trace of the script's process, kept in the store, is
read once for all of that process's graphs, and its findings name the script (``train.py``,
``train.py[r1]`` for rank 1), with the script's own lines; a captured graph run alone would show none
of the script's breaks or recompiles. Not guaranteed: that a trace torch wrote while crashing holds
every event of the run (what is there is read; the rest is not guessed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pt2kit.runtime.common.errors import EXIT_OK, UsageError
from pt2kit.runtime.parent.session import Session, torch_version
from pt2kit.schema import Store

from .job import Job
from .narrate import Narrator
from .tracelog import Trace, parse_text

HINT = "give a MODEL.py, --trace DIR, or pipe records: `fxcheck m.py | guardscan`"


TARGET = "pt2kit.guardscan.work:run"


def run(s: Session, job: Job) -> int:
    """Scan ``job``'s model (or each piped one) in a worker, or read its ``--trace``: the worst exit code."""
    if job.trace is not None:
        return _trace(s, Path(job.trace), job)
    if job.model is not None:
        return s.each_model(job, target=TARGET, narrator=Narrator, hint=HINT)
    return _piped(s, job)


def _piped(s: Session, job: Job) -> int:
    """Each piped model scanned in a worker, as ``each_model`` does, except the graphs ``pt2kit capture``
    took: their script's trace is read instead, once per process."""
    from pt2kit.runtime.parent.piped import read_piped
    from pt2kit.runtime.parent.preflight import preflight
    from pt2kit.schema import Header

    # a bad option is exit 2 before the stream is read or any model said (what needs torch to tell, in a worker)
    preflight(s, backend=job.backend, device=job.device, config=job.config)
    code, read, upstream = EXIT_OK, set(), None

    def read_once(trace: Any, where: str, label: str, note: str) -> int:
        """One process's structured trace scanned, the first time the stream names it (one trace, one report)."""
        if trace.sha256 in read:
            return EXIT_OK
        job.refuse_run_options(f"{label} is a graph pt2kit capture took: its script compiled it")
        read.add(trace.sha256)
        s.say(f"{where}: {label}: reading the script's structured trace {trace.path}{note}")
        return _report(s, job, label, parse_text(_blob_text(s.store, upstream, trace)), trace.path, read_sources=False)

    for line, m in read_piped(s, device=job.device, hint=HINT, config=job.config, stream_config=job.stream_config,
                              also=[Header]):
        if isinstance(line.record, Header) and line.record.store:  # that run's blobs, after this tool's own store
            upstream = Store(line.record.store)
        if isinstance(line.record, Header):  # pt2kit capture's processes that kept no graph: their traces say why
            for trace in line.record.traces:
                code = max(code, read_once(trace, f"{line.source}:{line.lineno}",
                                           f"{_script(line.record.argv)} (no graph kept)", ""))
        if m is None:
            continue
        captured = m.record.captured
        trace = captured.trace if captured is not None else None
        if trace is None:
            if captured is not None:
                s.warn(f"{m.where}: {m.label}: pt2kit capture kept no trace of its script: scanning the graph "
                       "alone, which shows none of the script's graph breaks or recompiles")
            m.say(s)
            one = job.for_piped(m)
            code = max(code, s.run_model(TARGET, one, Narrator(s.say, m.label, one)))
        else:
            code = max(code, read_once(trace, m.where, process_label(m.record), " (not running its graphs)"))
    return code


def _script(argv: list[str]) -> str:
    """The script of a capture run's argv (``capture -- python train.py --lr 3``): its first ``.py``."""
    command = argv[argv.index("--") + 1:] if "--" in argv else argv[1:]
    return next((a.rsplit("/", 1)[-1] for a in command if a.endswith(".py")), " ".join(command)[:80] or "the command")


def process_label(m: Any) -> str:
    """The script a captured graph's record names, without the graph's compile id: ``train.py[0/1]`` ->
    ``train.py``, ``train.py[r1:0/1]`` -> ``train.py[r1]`` (one trace is one process: all its graphs)."""
    c = m.captured
    head, bracket, tail = m.model.rpartition("[")
    if not (bracket and tail.endswith("]") and c.compile_id in tail):
        return m.model
    return head + (f"[r{c.rank}]" if c.rank else "")


def _blob_text(store: Store, upstream: Store | None, ref: Any) -> str:
    """A trace blob's text, from this tool's store or else the one the stream's run wrote to (its header's);
    a blob in neither is a BlobError (exit 2, one line)."""
    st = upstream if upstream is not None and store.locate(ref) is None else store
    return st.read(ref).decode("utf-8", errors="replace")


class _Narrated:
    """emit_findings's ``emit`` for a trace: each record written to stdout, then narrated as its Struct."""

    def __init__(self, s: Session, narrator: Narrator) -> None:
        self.s, self.narrator = s, narrator

    def __call__(self, cls: Any, **fields: Any) -> Any:
        rec = self.s.emit(cls, **fields)
        self.narrator.on(rec)
        return rec


def _trace(s: Session, trace_dir: Path, job: Job) -> int:
    from .tracelog import read_trace

    try:
        traces = read_trace(trace_dir)
    except (FileNotFoundError, OSError) as e:
        raise UsageError(str(e).splitlines()[0]) from None
    s.header(torch=torch_version())
    code = EXIT_OK
    for path, trace in traces:
        code = max(code, _report(s, job, path.name, trace, str(path)))
    return code


def _report(s: Session, job: Job, label: str, trace: Trace, where: str, read_sources: bool = True) -> int:
    """One process's trace as records, narrated: its exit code. A trace a stream named (``read_sources``
    False) is never a reason to read the script files it names."""
    from .findings import analyze
    from .records import emit_findings

    narrator = Narrator(s.say, label, job)
    counts = emit_findings(analyze(trace), _Narrated(s, narrator), s.store, model=label, read_sources=read_sources)
    if not trace.events:
        s.warn(f"{where}: no structured trace events in it")
    return narrator.finish(counts, {})
