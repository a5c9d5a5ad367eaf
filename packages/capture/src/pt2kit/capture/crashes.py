"""The `crash` record's fields, from what capture read of the command's processes (records.py): a graph its
backend raised on or was killed compiling, a compiled call that raised or died, an export that raised, the
command's own end. Each names the `model` record minify cuts (when there is a graph) and says, in its
message, what the narration prints. Nothing here imports torch.
"""

from __future__ import annotations

from typing import Any

from pt2kit_portable import signal_name

from .records import Entry, Export, Process, label


def exit_code(returncode: int) -> int:
    """What a shell says of the command: its code, or 128+N for signal N."""
    return 128 - returncode if returncode < 0 else returncode


def compile_crash_fields(entry: Entry, command: list[str]) -> dict[str, Any]:
    """The `crash` record of a graph the user's backend raised on, or was killed compiling (a signal in
    its compiler), naming that graph's model record, so `pt2kit capture -- python t.py | minify` minifies
    the compile error on it."""
    if entry.signal is not None:
        what = "AOT Inductor compiled its package" if entry.stage == "aoti-compile" else "its backend compiled it"
        return {"model": label(entry, command), "stage": entry.stage or "compile", "signal": entry.signal,
                "backend": entry.backend, "message": f"killed by {entry.signal} while {what}"}
    exception, _, message = (entry.error or "").partition(": ")
    return {"model": label(entry, command), "stage": entry.stage or "compile", "exception": exception or None,
            "message": message or entry.error, "backend": entry.backend}


def export_crash_fields(x: Export) -> dict[str, Any]:
    """The `crash` record of a torch.export.export the script called that raised: no graph, so no model
    (minify says it has nothing to cut), the script's line in the message."""
    return {"stage": "export", "exception": x.exception,
            "message": f"torch.export.export raised at {x.source}, before any graph existed: {x.message}"}


RUN_STAGES = {"run": "its compiled code raised", "aoti-load": "AOT Inductor could not load its package",
              "aoti-run": "its AOT Inductor package raised"}


def run_crash_fields(entry: Entry, model: str) -> dict[str, Any]:
    """The `crash` record of a graph whose compiled code raised when called (or AOT Inductor's package would
    not load), naming ``model``, the model record that holds that call's inputs."""
    exception, _, message = (entry.error or "").partition(": ")
    if entry.signal is not None:
        where = {"aoti-load": "while loading its AOT Inductor package", "aoti-run": "in its AOT Inductor package"}
        # a signal leaves the boot no time to write the call's inputs: the model holds the graph's first call's
        first = f" at call {entry.call}; its model holds call 1's inputs (call {entry.call}'s died with the process)" \
            if (entry.call or 1) > 1 and entry.stage == "run" else ""
        return {"model": model, "stage": entry.stage, "signal": entry.signal, "backend": entry.backend, "step": entry.call,
                "phase": entry.phase, "message": f"killed by {entry.signal} " +
                where.get(entry.stage or "", f"in its compiled {entry.phase or 'code'}") + first}
    return {"model": model, "stage": entry.stage, "exception": exception or None, "message": message or entry.error,
            "backend": entry.backend, "step": entry.call, "phase": entry.phase}


def crash_fields(returncode: int, procs: list[Process], timed_out: float | None,
                 ended: str | None = None) -> dict[str, Any]:
    """The `crash` record of a command that failed: its exit code or signal, the exception a process
    died of (its exit.json), and whether --timeout killed it; ``ended``: how a process whose exit status
    no one read ended (a notebook kernel that died in a captured block), instead of an exit code."""
    sig = signal_name(returncode)
    died = next((p.exit for p in procs if p.exit is not None and p.exit.exception), None)
    if ended is not None:
        return {"stage": "run", "exitcode": None, "signal": sig, "exception": None, "message": ended}
    if timed_out is not None:
        message = f"timed out after {timed_out:g}s: the command's processes were killed"
    elif died is not None:
        message = died.message
    else:
        message = f"the command was killed by {sig}" if sig else f"the command exited with code {returncode}"
    return {"stage": "run", "exitcode": returncode, "signal": sig,
            "exception": died.exception if died is not None and timed_out is None else None, "message": message}
