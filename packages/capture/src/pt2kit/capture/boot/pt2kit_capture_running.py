"""Which compiled call this process is in, kept where a signal cannot take it: ``p<pid>/running``, a small
file mapped into memory, holds the graph line's seq, the call's number and what runs (a compiled
forward or backward; an AOT Inductor package loading or called) while it runs, and zeros once it
returned or raised. A process killed inside one (a kernel's
SIGSEGV, an ``abort()``) leaves it set, and the parent names that graph in the `crash` record.

Runs inside the user's interpreter: stdlib only. Guarantees: a call costs two writes into mapped memory
(no system call once the file is mapped, one ``getpid``); a failure of ours (no scratch dir, a full disk)
leaves the marker off, never the script. Not guaranteed: the inputs of a later call that a signal killed
(the graph's model file holds its first call's).
"""

from __future__ import annotations

import mmap
import os
import struct
from typing import Any

import pt2kit_capture_contract as contract
import pt2kit_capture_process as process

CODES = {what: code for code, what in contract.RUNNING.items()}
_MAP: dict[int, Any] = {}  # pid -> its mapped file (a forked child maps its own)


def _mapped() -> Any:
    pid = os.getpid()
    m = _MAP.get(pid)
    if m is None:
        where = process.pdir()
        where.mkdir(parents=True, exist_ok=True)
        fd = os.open(where / contract.RUNNING_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            os.ftruncate(fd, contract.RUNNING_SIZE)
            m = _MAP[pid] = mmap.mmap(fd, contract.RUNNING_SIZE)
        finally:
            os.close(fd)
        _watch_faults(where)
    return m


_FAULT: list[int] = []  # the fd faulthandler reports into, while it is ours


def _watch_faults(where: Any) -> None:
    """The fatal signal that kills this process, named where the parent reads it: faulthandler's report, in
    ``p<pid>/fault``. A worker's exit status is its launcher's (torchrun, mp.spawn), never capture's, so
    this is how a worker's segfault in a compiled call names the graph. faulthandler's C handler writes the
    report, then lets the signal kill the process as before (same status, core dump). Left alone where
    faulthandler is on already (the script's own choice, ``PYTHONFAULTHANDLER``); a forked child turns
    ours off (its first compiled call turns on its own). Once a process, at its first compiled call."""
    import faulthandler
    import fcntl

    try:
        if faulthandler.is_enabled():
            return
        fd = os.open(where / contract.FAULT, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        if fd < 3:  # the script closed a standard fd: it stays closed (never ours to fill), ours goes above
            fd, low = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3), fd
            os.close(low)
        faulthandler.enable(file=fd, all_threads=False)  # kept open: it writes there until the process ends
        if not _FAULT:
            os.register_at_fork(after_in_child=_forked)
        _FAULT[:] = [fd]
    except Exception:
        pass


def _forked() -> None:
    if _FAULT:
        import faulthandler

        faulthandler.disable()
        try:
            os.close(_FAULT.pop())
        except OSError:
            pass


def release() -> None:
    """This process's mapped marker closed, and faulthandler turned off where :func:`_watch_faults` turned it
    on (the in-process capture's end: the process goes on without capture)."""
    m = _MAP.pop(os.getpid(), None)
    if m is not None:
        m.close()
    _forked()


def enter(line: dict[str, Any], call: int, phase: str | None, stage: str = "run") -> bytes | None:
    """Mark call ``call`` of ``line``'s graph running (at ``stage``, its ``phase``: "forward" or "backward" for
    stage "run"); the token puts back what was marked."""
    try:
        m = _mapped()
        before = m[:12]
        m[:12] = struct.pack("<iii", int(line["seq"]) + 1, call, CODES[(stage, phase)])
        return before
    except Exception:
        return None


_COMPILES = [0]  # this process's backend compiles so far: the N of each one's compiling-<N>.json


def compiling(line: dict[str, Any], stage: str) -> tuple[bytes | None, Any] | None:
    """Mark the backend compiling ``line``'s graph (at ``stage``: "compile" or "aoti-compile"): the line, as
    it would be appended once the backend returns, written to ``compiling-<N>.json`` first, so a signal in
    the compiler (a segfault in its C++ code, an ``abort()``) names the graph. One small file a compile
    (compiles take seconds); the token (for :func:`compiled`) puts the marker back and removes the file."""
    import json

    try:
        n = _COMPILES[0]
        _COMPILES[0] += 1
        path = _mapped_dir() / contract.COMPILING.format(n)
        path.write_text(json.dumps(dict(line, seq=0), default=str))
        m = _mapped()
        before = m[:12]
        m[:12] = struct.pack("<iii", n + 1, 0, CODES[(stage, None)])
        return before, path
    except Exception:
        return None


def compiled(token: tuple[bytes | None, Any] | None) -> None:
    if token is not None:
        leave(token[0])
        try:
            token[1].unlink()
        except OSError:
            pass


def _mapped_dir() -> Any:
    _mapped()
    return process.pdir()


def leave(token: bytes | None) -> None:
    if token is not None:
        try:
            _mapped()[:12] = token
        except Exception:
            pass
