"""What a tool writes at a path the user named (``-o``, ``--save-package``): checked before any work,
never over one of the tool's inputs, and written whole or not at all.

Guarantees:

* :func:`check_output` runs before the work: the path is not a directory, its directory exists (or
  can be made: it is, when the file is written) and can be written in, and it is not the same file
  as any input (the model file, a stream file,
  stdin's file, a backend or profile file, ``--durations``), compared by device and inode after
  symlinks are followed, so a link or a hard link to an input is caught too. Each refusal is one
  line and exit 2, like gcc's "input file is the same as output file".
* :func:`check_stdout` refuses a stdout redirected into one of the inputs of a tool that forwards
  what it reads (``pt2kit cat run.ndjson >> run.ndjson`` would read its own output without end).
* :func:`write_output` writes through a temporary file beside the real file and renames it, so a
  failed or killed write leaves the old file (or none) behind, and a symlink the user named keeps
  pointing where it did. A path that is not a regular file (``/dev/stdout``, a FIFO) is written in
  place, never replaced.

Not guaranteed: durability across a power loss or an OS crash (neither the file nor its directory is
fsynced: a rename survives a killed tool, not a lost page cache); a check that still holds when the
file is written (the path is checked before the work and may be changed by someone else meanwhile);
that a path written in place (a FIFO, a device) is written whole.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterable
from pathlib import Path

from .errors import UsageError

STDIN = "-"


def _stat(path: str | os.PathLike[str] | int) -> os.stat_result | None:
    try:
        return os.fstat(path) if isinstance(path, int) else os.stat(path)
    except (OSError, ValueError):
        return None


def _input_stat(path: str | os.PathLike[str]) -> os.stat_result | None:
    if str(path) == STDIN:
        try:
            return _stat(sys.stdin.fileno())
        except (AttributeError, ValueError, OSError):  # no real stdin (a test runner's)
            return None
    return _stat(path)


def same_input(target: os.stat_result, inputs: Iterable[tuple[str, str | os.PathLike[str]]]) -> str | None:
    """The first input (``what given``) that is the regular file ``target`` is, else None."""
    if not stat.S_ISREG(target.st_mode):
        return None
    for what, given in inputs:
        st = _input_stat(given)
        if st is not None and (st.st_dev, st.st_ino) == (target.st_dev, target.st_ino):
            return "stdin's file" if str(given) == STDIN else f"{what} {given}"
    return None


def check_output(flag: str, path: str | os.PathLike[str],
                 inputs: Iterable[tuple[str, str | os.PathLike[str]]] = ()) -> Path:
    """``path``, once it is known that writing it later can succeed and loses none of the inputs
    (``(what, path)`` pairs, ``-`` for stdin); UsageError in one line otherwise."""
    given = Path(path)
    st = _stat(given)
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{flag} {given}: is a directory; name the file to write")
    if st is not None:
        clash = same_input(st, inputs)
        if clash:
            real = os.path.realpath(given)
            via = f" (it resolves to {real})" if real != os.path.abspath(given) else ""
            raise UsageError(f"{flag} {given}: is the same file as {clash}{via}; "
                             "writing it would overwrite an input")
        if not stat.S_ISREG(st.st_mode):
            return given  # a device or FIFO the user named: written in place
    # a missing directory is made when the file is written (`kdiff ... | minify -o pt2kit-out/repro.py`
    # starts before kdiff has made its store): what must hold now is that it can be
    probe = Path(os.path.realpath(given)).parent
    while not os.path.lexists(probe) and probe != probe.parent:
        probe = probe.parent
    if not os.path.isdir(probe):
        raise UsageError(f"{flag} {given}: {probe} is not a directory")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise UsageError(f"{flag} {given}: cannot write in directory {probe} (permission denied)")
    return given


def check_stdout(inputs: Iterable[tuple[str, str | os.PathLike[str]]]) -> None:
    """UsageError when stdout is a regular file that is also one of ``inputs``."""
    try:
        st = _stat(sys.stdout.fileno())
    except (AttributeError, ValueError, OSError):
        return
    clash = same_input(st, inputs) if st is not None else None
    if clash:
        raise UsageError(f"stdout is the same file as {clash}, which this tool reads; send stdout elsewhere")


def write_output(path: str | os.PathLike[str], data: str | bytes) -> Path:
    """Write ``data`` at ``path`` (see the module's header): through a rename beside the file the path
    resolves to, or in place where that is not a regular file."""
    from pt2kit.schema.store import atomic_write

    st = _stat(path)
    if st is not None and not stat.S_ISREG(st.st_mode):
        with open(path, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        return Path(path)
    atomic_write(os.path.realpath(path), data)
    return Path(path)
