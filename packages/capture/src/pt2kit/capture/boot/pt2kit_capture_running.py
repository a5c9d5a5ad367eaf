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

CODES = {what: code for code, what in contract.RUNNING.items()}
_MAP: dict[int, Any] = {}  # pid -> its mapped file (a forked child maps its own)


def _mapped() -> Any:
    pid = os.getpid()
    m = _MAP.get(pid)
    if m is None:
        import pt2kit_capture_boot as boot

        where = boot.pdir()
        where.mkdir(parents=True, exist_ok=True)
        fd = os.open(where / contract.RUNNING_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            os.ftruncate(fd, contract.RUNNING_SIZE)
            m = _MAP[pid] = mmap.mmap(fd, contract.RUNNING_SIZE)
        finally:
            os.close(fd)
    return m


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
    import pt2kit_capture_boot as boot

    return boot.pdir()


def leave(token: bytes | None) -> None:
    if token is not None:
        try:
            _mapped()[:12] = token
        except Exception:
            pass
