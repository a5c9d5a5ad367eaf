"""capture's parent side: run the user's command with the child boot on its path, wait for it, then write
what its processes captured as records.

Guarantees:

* The command runs unmodified with ``boot/`` first on PYTHONPATH and the PT2KIT_CAPTURE_* variables
  (and TORCH_TRACE, unless the user set it) in its environment: every Python process it starts
  (torchrun's ranks too) captures its own graphs. Its process is the script's as without capture
  (:mod:`pt2kit.runtime.parent.foreground`: fds, terminal, job control, signals, ``setsid``); its stderr, exit code, working
  directory and files are its own; its stdout goes to our stderr, so that our stdout carries records
  only, unless ``--out FILE`` takes the records (then its stdout is left on stdout).
* Where the records go is checked before the command runs (:mod:`.outfile`): a bad ``--out`` is one
  line and exit 2 with nothing run; one that fails at the end keeps the records in the store and says
  where, and capture exits with the command's code all the same.
* Records are written once the command has ended (a process's trace is complete then): the header,
  a `model` per kept graph, and a `crash` when the command failed, was killed, timed out or was
  interrupted; graphs captured before that stay valid and are written all the same. No signal stops
  capture while it writes them (a hangup, a Ctrl-C then): they are never lost once the command ran.
* Ctrl-C or SIGTERM sent to capture itself is handed on to the command, which may take its time (a
  script saving a checkpoint on KeyboardInterrupt finishes); a second one kills its tree. ``--timeout``
  sends SIGTERM to the tree, then SIGKILL after ``GRACE`` seconds. Then the records are written and
  capture exits 130/143 (the timeout: the command's own code, 128+N for its signal).
* The scratch dir ``<store>/.capture-<run id>/`` is removed at the end, whatever the end; its ``owner``
  file names this process, so ``pt2kit gc`` removes a scratch dir whose capture was killed (SIGKILL).

Not guaranteed: that a process the command left running in the background stops when it exits; that
its graphs are captured once the records are written.
"""

from __future__ import annotations

import io
import os
import shlex
import shutil
import signal
from pathlib import Path
from typing import Any

import pt2kit_portable
from pt2kit.runtime.cli.storegc import scratch_owner
from pt2kit.runtime.common.errors import Terminated, UsageError
from pt2kit.runtime.parent import foreground
from pt2kit.runtime.parent.session import Session, torch_version
from pt2kit.schema import Crash, Model

from . import outfile, runs
from .boot import pt2kit_capture_contract as contract
from .crashes import compile_crash_fields, crash_fields, export_crash_fields, run_crash_fields
from .job import Job
from .narrate import Narrator, Summary, not_runnable
from .records import (
    Entry,
    Process,
    graph_of,
    killed_in_call,
    label,
    model_fields,
    pick,
    read_markers,
    read_processes,
    tag_processes,
    trace_logs,
)

BOOT = Path(__file__).resolve().parent / "boot"
GRACE = foreground.GRACE
# the boot imports it; copied into the scratch dir: its own folder holds the rest of site-packages
PORTABLE = Path(pt2kit_portable.__file__)


def run(s: Session, job: Job) -> int:
    """Run ``job``'s command under capture and write its records: the command's exit code (0 when it
    succeeded, whether or not it compiled anything)."""
    if shutil.which(job.command[0]) is None:
        raise UsageError(not_runnable(job.command[0]))
    target = outfile.prepare(job.out, job.command)
    try:
        s.store.root.mkdir(parents=True, exist_ok=True)
        scratch = s.store.root / f".capture-{s.writer.run}"
        scratch.mkdir()
    except BaseException:
        outfile.discard(target)
        raise
    sigs = foreground.block()  # from here to the records' end, signals are read, not died of
    try:
        (scratch / "owner").write_text(scratch_owner())
        user_trace = os.environ.get("TORCH_TRACE") or None
        narrator = Narrator(s.say, "the command", job)
        s.say(f"running {shlex.join(job.command)}")
        pid = _start(job, scratch, user_trace, target)
        checker = runs.start()
        try:
            end = foreground.wait(pid, sigs, job.timeout, spare=(checker.pid,))
            trace_dir = Path(user_trace) if user_trace else scratch / "trace"
            s.writer.out = io.BytesIO()
            try:
                code = write_records(s, job, scratch, trace_dir, bool(user_trace), end.returncode,
                              job.timeout if end.timed_out else None, narrator, checker)
            finally:  # also after an error of ours midway: the records written so far are not lost
                _deliver(s, target)
        finally:  # unused (no graph kept) or left by an error of ours
            if checker.poll() is None:
                checker.kill()
                checker.wait()
        if end.stop is not None:
            raise KeyboardInterrupt() if end.stop == signal.SIGINT else Terminated()
        return code
    finally:
        outfile.discard(target)
        shutil.rmtree(scratch, ignore_errors=True)
        foreground.unblock(sigs)


def _deliver(s: Session, target: outfile.Target) -> None:
    """The records, built in memory, to --out or stdout; kept in the store when that fails."""
    data = s.writer.out.getvalue()
    s.writer.out = open(os.devnull, "wb")  # what the Session flushes at the end
    try:
        outfile.deliver(target, data)
    except UsageError as e:  # the command made a file at --out while it ran: never replaced
        s.say(f"{e}; the records are kept in {outfile.keep(s.store.root, s.writer.run, data)}")
    except OSError as e:
        kept = outfile.keep(s.store.root, s.writer.run, data)
        where = f"--out {target.path}" if target.path else "stdout"
        s.say(f"cannot write the records to {where} ({e.strerror or e}); they are kept in {kept}")


def boot_path(scratch: Path) -> list[str]:
    """The folders the command's PYTHONPATH starts with: the boot's, and ``scratch/lib`` holding a copy of
    pt2kit_portable (the script may run where pt2kit is not installed, and the folder pt2kit_portable is
    installed in holds everything else of ours and its dependencies)."""
    lib = scratch / "lib"
    lib.mkdir(exist_ok=True)
    shutil.copyfile(PORTABLE, lib / PORTABLE.name)
    return [str(BOOT), str(lib)]


def _start(job: Job, scratch: Path, user_trace: str | None, target: outfile.Target) -> int:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [*boot_path(scratch), env.get("PYTHONPATH")]))
    env.update(contract.child_env(str(scratch), job.values, job.max_value_bytes, job.run_budget, job.rank, job.graphs,
                                  job.check))
    if user_trace is None:
        env["TORCH_TRACE"] = str(scratch / "trace")
    try:
        return foreground.spawn(job.command, env, stdout_fd=None if target.path else 2)
    except OSError as e:  # found by which(), gone or not executable since
        raise UsageError(f"{job.command[0]}: cannot run it: {e.strerror or e}") from None


def _graph(s: Session, job: Job, p: Process, entry: Entry, trace: Any, narrator: Narrator,
           emitted: dict[str, str]) -> int:
    """One manifest line's records: its `model` (where its model file was not written already), and a
    `crash` naming that model where the backend raised or its compiled code did; 1 where it wrote the first
    model record of its graph (a later call's inputs, in a model of their own, are no graph more)."""
    graph = graph_of(entry, p.entries)
    new = 0
    if entry.file in emitted:  # a failing first call: its graph's model file holds its inputs
        name = emitted[entry.file]
    elif entry.file is None:  # the boot could not write its model file: said, never a silent gap
        if entry.of is not None and graph is not None and graph.file in emitted:
            name = emitted[graph.file]
        else:
            s.warn(f"{label(entry, job.command)}: not captured: {entry.capture_error or 'no model file'}")
            return 0
    else:
        model = s.emit(Model, **model_fields(s.store, job, p, entry, trace, s.warn))
        narrator.on(model)
        new = int(graph is None or graph.file not in emitted)
        name = emitted[entry.file] = model.model
    if entry.of is not None and entry.check is None:  # a --check line's call ran; the model record says how it failed
        narrator.on(s.emit(Crash, **run_crash_fields(entry, name)))
    elif entry.error or entry.signal:
        narrator.on(s.emit(Crash, **compile_crash_fields(entry, job.command)))
    return new


def _put_trace(s: Session, log: Path, user_trace: bool) -> Any:
    """A process's trace log into the store (copied where it is the user's own TORCH_TRACE, else moved)."""
    return s.store.put(log.read_bytes(), "text/plain", ".log") if user_trace else s.store.put_file(log, "text/plain", ".log")


def _mentions(log: Path, needle: bytes, chunk: int = 1 << 20) -> bool:
    """Whether the log holds ``needle``, read a chunk at a time: a trace log can be far larger than what
    capture may hold in memory, and :func:`_put_trace` moves the file into the store without reading it."""
    tail = b""
    with log.open("rb") as f:
        while block := f.read(chunk):
            if needle in tail + block:
                return True
            tail = (tail + block)[-len(needle) + 1:]
    return False


def write_records(s: Session, job: Job, scratch: Path, trace_dir: Path | None, user_trace: bool, returncode: int,
                  timed_out: float | None, narrator: Narrator, checker: Any = None, ended: str | None = None) -> int:
    """The header, a model record per kept graph, a crash when the command failed; the exit code. ``ended``:
    the crash's message where no exit status was read (:func:`.crashes.crash_fields`)."""
    procs, marks = read_processes(scratch), read_markers(scratch)
    kept_procs = [p for p in procs if job.keeps_rank(p.rank)]
    for p in kept_procs:
        killed_in_call(p, returncode)
    tag_processes(kept_procs)
    logs = trace_logs(trace_dir)
    # a process that keeps no graph has no model record to carry its trace: the header does, so guardscan
    # can still say why nothing was compiled
    # (a process Dynamo started a frame in: "dynamo_start"; not a launcher that only imported torch)
    covered = {p.pid for p in kept_procs if pick(p.entries, job.graphs)}
    dropped = {p.pid for p in procs if not job.keeps_rank(p.rank)}
    bare = [log for pid, log in sorted(logs.items()) if pid not in covered | dropped and _mentions(log, b'"dynamo_start"')]
    traces = [_put_trace(s, log, user_trace) for log in bare]
    s.header(torch=torch_version(), traces=traces)
    # each model file loaded and run once, in one child, before any record names it
    runs.check(s, [(p, e) for p in kept_procs for e in pick(p.entries, job.graphs)], job.command, checker)
    kept = 0
    for p in kept_procs:
        chosen = pick(p.entries, job.graphs)
        log = logs.get(p.pid)
        trace = None
        if chosen and log is not None:
            trace = _put_trace(s, log, user_trace)
        emitted: dict[str, str] = {}  # model file -> the label of the model record written for it
        for entry in chosen:
            kept += _graph(s, job, p, entry, trace, narrator, emitted)
        for x in p.exports:
            narrator.on(s.emit(Crash, **export_crash_fields(x)))
    over = next((e for p in kept_procs for e in pick(p.entries, job.graphs) if e.over_run_budget), None)
    if over is not None:
        s.warn(f"--max-run-bytes: the run's saved inputs reached {job.run_budget} bytes at {label(over, job.command)}: "
               "its inputs past that and every later graph's are seeded in their range (its header says so)")
    compiled = {e.compile_id for p in kept_procs for e in p.entries if e.compile_id and e.of is None}
    if job.graphs not in (("all",), ("first",), ("failing",)):
        missing = [g for g in job.graphs if g not in compiled]
        if missing and compiled:
            s.warn(f"--graphs: no graph {', '.join(missing)} was compiled (compiled: {', '.join(sorted(compiled))})")
    if returncode != 0:
        narrator.on(s.emit(Crash, **crash_fields(returncode, procs, timed_out, ended)))
    failed = sum(e.check is not None for p in kept_procs for e in pick(p.entries, job.graphs))
    return narrator.finish(Summary(returncode=returncode, failed=failed,
                                   compiled=sum(e.of is None for p in kept_procs for e in p.entries),
                                   kept=kept, processes=sum(1 for p in kept_procs if p.entries),
                                   broken=sum(p.broken for p in kept_procs),
                                   unreadable=tuple(w for p in kept_procs for w in p.unreadable), booted=len(marks.booted),
                                   hooked=len(marks.hooked), unhooked=len(marks.unhooked),
                                   hook_errors=tuple(sorted(set(marks.hook_errors.values()))),
                                   skipped=tuple(marks.skipped), rank=job.rank, traces=len(traces),
                                   exports=sum(len(p.exports) for p in kept_procs)), {})
