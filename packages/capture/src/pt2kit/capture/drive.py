"""capture's parent side: run the user's command with the child boot on its path, wait for it, then write
what its processes captured as records.

Guarantees:

* The command runs unmodified in its own process group, with ``boot/`` first on PYTHONPATH and the
  PT2KIT_CAPTURE_* variables (and TORCH_TRACE, unless the user set it) in its environment: every
  Python process it starts (torchrun's ranks too) captures its own graphs. Its stderr, exit code,
  working directory and files are its own; its stdout goes to our stderr, so that our stdout carries
  records only, unless ``--out FILE`` takes the records (then its stdout is left on stdout).
* Records are written once the command has ended (a process's trace is complete then): the header,
  a `model` per kept graph, and a `crash` when the command failed, was killed, timed out or was
  interrupted; graphs captured before that stay valid and are written all the same.
* ``--timeout``, Ctrl-C and SIGTERM stop the whole process group (SIGTERM, or SIGINT for Ctrl-C, as a
  terminal would send; SIGKILL after ``GRACE`` seconds), then the records are written and capture
  exits 130/143 (the timeout: the command's own code, 128+N for its signal).
* The scratch dir ``<store>/.capture-<run id>/`` is removed at the end, whatever the end.

Not guaranteed: that a process the command left running in the background (outside its group, or
after the group's leader exited) stops; that its graphs are captured once the records are written.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

from pt2kit.runtime.errors import UsageError
from pt2kit.runtime.session import Session, torch_version
from pt2kit.runtime.writes import check_output
from pt2kit.schema import Crash, Model

from .job import Job
from .narrate import Narrator, Summary
from .records import crash_fields, model_fields, pick, put_file, read_processes, trace_logs

BOOT = Path(__file__).resolve().parent / "boot"
GRACE = 3.0


def run(s: Session, job: Job) -> int:
    """Run ``job``'s command under capture and write its records: the command's exit code (0 when it
    succeeded, whether or not it compiled anything)."""
    if job.out is not None:
        check_output("--out", job.out)
    if shutil.which(job.command[0]) is None:
        raise UsageError(f"{job.command[0]}: no such command")
    s.store.root.mkdir(parents=True, exist_ok=True)
    scratch = s.store.root / f".capture-{s.writer.run}"
    scratch.mkdir()
    try:
        user_trace = os.environ.get("TORCH_TRACE") or None
        narrator = Narrator(s.say, "the command", job)
        s.say(f"running {shlex.join(job.command)}")
        stop: KeyboardInterrupt | None = None
        proc = _start(job, scratch, user_trace)
        try:
            timed_out = _wait(proc, job.timeout)
        except KeyboardInterrupt as e:  # Ctrl-C or SIGTERM (Terminated): the command stops with us
            stop = e
            _stop_group(proc, signal.SIGINT if type(e) is KeyboardInterrupt else signal.SIGTERM)
            timed_out = False
        trace_dir = Path(user_trace) if user_trace else scratch / "trace"
        code = _write(s, job, scratch, trace_dir, bool(user_trace), proc.returncode,
                      job.timeout if timed_out else None, narrator)
        if stop is not None:
            raise stop
        return code
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _start(job: Job, scratch: Path, user_trace: str | None) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(BOOT), env.get("PYTHONPATH")]))
    env["PT2KIT_CAPTURE_DIR"] = str(scratch)
    env["PT2KIT_CAPTURE_VALUES"] = job.values
    env["PT2KIT_CAPTURE_MAX_VALUE_BYTES"] = str(job.max_value_bytes)
    env["PT2KIT_CAPTURE_RANK"] = "all" if job.rank is None else str(job.rank)
    if user_trace is None:
        env["TORCH_TRACE"] = str(scratch / "trace")
    try:
        # its own process group: --timeout and Ctrl-C stop torchrun's ranks and compile workers with it
        return subprocess.Popen(job.command, env=env, stdout=None if job.out else sys.stderr.fileno(),
                                process_group=0)
    except OSError as e:  # found by which(), gone or not executable since
        raise UsageError(f"{job.command[0]}: cannot run it: {e.strerror or e}") from None


def _wait(proc: subprocess.Popen[bytes], timeout: float | None) -> bool:
    """Wait for the command; past ``timeout`` stop its group. Whether it timed out."""
    if timeout is None:
        proc.wait()
        return False
    expired = threading.Event()

    def expire() -> None:
        expired.set()
        _stop_group(proc, signal.SIGTERM)

    timer = threading.Timer(timeout, expire)
    timer.daemon = True
    timer.start()
    try:
        proc.wait()
    finally:
        timer.cancel()
    return expired.is_set()


def _stop_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    """``sig`` to the command's process group, then SIGKILL after GRACE seconds."""
    try:
        os.killpg(proc.pid, sig)
        proc.wait(timeout=GRACE)
    except subprocess.TimeoutExpired:
        pass
    except ProcessLookupError:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the leader may be gone while its ranks still run
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _write(s: Session, job: Job, scratch: Path, trace_dir: Path, user_trace: bool, returncode: int,
           timed_out: float | None, narrator: Narrator) -> int:
    """The header, a model record per kept graph, a crash when the command failed; the exit code."""
    procs = read_processes(scratch)
    kept_procs = [p for p in procs if job.keeps_rank(p.rank)]
    logs = trace_logs(trace_dir)
    if job.out is not None:
        s.writer.out = open(job.out, "wb")  # the Session flushes it; the exit closes it
    s.header(torch=torch_version())
    kept = 0
    for p in kept_procs:
        chosen = pick(p.entries, job.graphs)
        log = logs.get(p.pid)
        trace = None
        if chosen and log is not None:
            trace = (s.store.put(log.read_bytes(), "text/plain", ".log") if user_trace
                     else put_file(s.store, log, "text/plain", ".log"))
        for entry in chosen:
            narrator.on(s.emit(Model, **model_fields(s.store, job, p, entry, trace, s.warn)))
            kept += 1
    compiled = {e.compile_id for p in kept_procs for e in p.entries}
    if job.graphs not in (("all",), ("first",), ("failing",)):
        missing = [g for g in job.graphs if g not in compiled]
        if missing and compiled:
            s.warn(f"--graphs: no graph {', '.join(missing)} was compiled (compiled: {', '.join(sorted(compiled))})")
    if returncode != 0:
        narrator.on(s.emit(Crash, **crash_fields(returncode, procs, timed_out)))
    return narrator.finish(Summary(returncode=returncode, compiled=sum(len(p.entries) for p in kept_procs),
                                   kept=kept, processes=sum(1 for p in kept_procs if p.entries),
                                   broken=sum(p.broken for p in kept_procs)), {})
