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
* Where stdin is our terminal, the command's group is the terminal's foreground group while it runs:
  it reads the terminal (``input()``, pdb) and gets Ctrl-C straight from it, as without us.
* Ctrl-C or SIGTERM sent to capture is handed on to the command's group, which may take its time (a
  script saving a checkpoint on KeyboardInterrupt finishes); a second one kills the group. ``--timeout``
  sends SIGTERM, then SIGKILL after ``GRACE`` seconds. Then the records are written and capture exits
  130/143 (the timeout: the command's own code, 128+N for its signal).
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
from .records import (
    compile_crash_fields,
    crash_fields,
    label,
    model_fields,
    pick,
    read_processes,
    tag_processes,
    trace_logs,
)

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
        tty = _foreground(proc.pid)  # the terminal is the command's: it reads stdin, Ctrl-C goes to it
        try:
            timed_out = _wait(proc, job.timeout)
        except KeyboardInterrupt as e:  # Ctrl-C or SIGTERM (Terminated) sent to us: the command gets it too
            stop = e
            _interrupt(proc, signal.SIGINT if type(e) is KeyboardInterrupt else signal.SIGTERM)
            timed_out = False
        finally:
            if tty:
                _foreground(os.getpgrp(), take=True)
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
    env["PT2KIT_CAPTURE_GRAPHS"] = ",".join(job.graphs)  # the boot writes files for the kept graphs only
    env["PT2KIT_CAPTURE_MAX_RUN_BYTES"] = "" if job.run_budget is None else str(job.run_budget)
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


def _foreground(pgid: int, take: bool = False) -> bool:
    """Make ``pgid`` the terminal's foreground process group, where stdin is our terminal and we hold it
    (``take``: give it back to us): the command, in a group of its own, would otherwise be stopped
    (SIGTTIN) the moment it read the terminal, as ``input()`` or pdb do. False where there is none."""
    try:
        fd = sys.stdin.fileno()
        if not os.isatty(fd) or (not take and os.tcgetpgrp(fd) != os.getpgrp()):
            return False
        old = signal.signal(signal.SIGTTOU, signal.SIG_IGN)  # a background group may still set it so
        try:
            os.tcsetpgrp(fd, pgid)
        finally:
            signal.signal(signal.SIGTTOU, old)
        if not take:
            os.killpg(pgid, signal.SIGCONT)  # it may have read the terminal before it had it
        return True
    except (OSError, ValueError, AttributeError):
        return False


def _interrupt(proc: subprocess.Popen[bytes], sig: int) -> None:
    """Ctrl-C or SIGTERM: handed on to the command's group, which may take its time (a script that saves
    a checkpoint on KeyboardInterrupt finishes writing it); a second one kills the group."""
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass
    try:
        proc.wait()
    except KeyboardInterrupt:
        _stop_group(proc, signal.SIGKILL)
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # what the leader left running (its ranks, compile workers)
    except (ProcessLookupError, PermissionError):
        pass


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
    tag_processes(kept_procs)
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
                     else s.store.put_file(log, "text/plain", ".log"))
        for entry in chosen:
            if entry.file is None:  # the boot could not write its model file: said, never a silent gap
                s.warn(f"{label(entry, job.command)}: not captured: {entry.capture_error or 'no model file'}")
                continue
            narrator.on(s.emit(Model, **model_fields(s.store, job, p, entry, trace, s.warn)))
            if entry.error:
                narrator.on(s.emit(Crash, **compile_crash_fields(entry, job.command)))
            kept += 1
    over = next((e for p in kept_procs for e in pick(p.entries, job.graphs) if e.over_run_budget), None)
    if over is not None:
        s.warn(f"--max-run-bytes: the run's saved inputs reached {job.run_budget} bytes at {label(over, job.command)}: "
               "its inputs past that and every later graph's are seeded in their range (its header says so)")
    compiled = {e.compile_id for p in kept_procs for e in p.entries if e.compile_id}
    if job.graphs not in (("all",), ("first",), ("failing",)):
        missing = [g for g in job.graphs if g not in compiled]
        if missing and compiled:
            s.warn(f"--graphs: no graph {', '.join(missing)} was compiled (compiled: {', '.join(sorted(compiled))})")
    if returncode != 0:
        narrator.on(s.emit(Crash, **crash_fields(returncode, procs, timed_out)))
    return narrator.finish(Summary(returncode=returncode, compiled=sum(len(p.entries) for p in kept_procs),
                                   kept=kept, processes=sum(1 for p in kept_procs if p.entries),
                                   broken=sum(p.broken for p in kept_procs)), {})
