"""Where capture's records go (``--out FILE`` or stdout): checked before the command runs, written at
its end, and never lost.

Guarantees:

* Before the command starts, one line and exit 2 (nothing run) when the records could not go where
  asked: ``--out``'s folder is missing or not writable (a temporary file is made in it now, and
  renamed over FILE at the end: FILE is replaced whole or not at all), it is a directory, it is a
  symbolic link to a file (capture does not write through links: name the file itself), it is the
  same file as capture's stdout (``--out o.ndjson ... > o.ndjson`` would bury the command's own
  output), the same file as the command or one of its arguments (``--out train.py -- python
  train.py``), an existing file that is not a pt2kit stream (a script, a config, a checkpoint: only a
  stream is ever replaced), or a device or pipe that refuses writing (``/dev/full``); and when
  stdout, which takes the records without ``--out``, refuses writing.
* A device, FIFO or terminal named by ``--out`` (``/dev/stderr``, ``>(kdiff)``) is written in place.
* The records are built in memory and written at the end in one go; when that fails (a full disk,
  the reader of the pipe gone, a hung-up terminal) they are saved in the store as
  ``capture-<run>.ndjson`` (else in the temporary directory) and capture says where: records are
  never lost once the command ran, and capture still exits with the command's code.

* At the end the path is checked again, as it is written (runtime.writes): a file the command made there
  while it ran (it was not there at the check) is never replaced, whatever it holds, nor one that no longer
  carries pt2kit's marker; the records are kept as above instead, and one line says why.

Not guaranteed: durability across a power loss (nothing is fsynced).
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pt2kit.runtime.common.errors import UsageError
from pt2kit.runtime.parent.writes import check_output, command_files, is_stream, same_input, write_output


@dataclass
class Target:
    """Where the records go: stdout (``path`` None), a regular file through ``tmp``, or an open fd."""

    path: str | None = None
    tmp: Path | None = None
    fd: int | None = None  # a device or FIFO held open since the check (or stdout's fd 1)


def prepare(out: str | None, command: list[str]) -> Target:
    """The records' destination, checked (see the header); UsageError in one line otherwise."""
    if out is None:
        _probe(1, "stdout (where the records go without --out)")
        return Target(fd=1)
    if os.path.islink(out):
        st = _stat(out)  # what it points at (/dev/stderr: a pipe, a terminal), or None when dangling
        if st is None or stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode):
            raise UsageError(f"--out {out}: is a symbolic link (to {os.readlink(out)}); capture replaces the file "
                             "whole and does not write through links: name the file itself, or another one")
    st = _stat(out)
    stdout = _fstat(1)
    if st is not None and stdout is not None and (st.st_dev, st.st_ino) == (stdout.st_dev, stdout.st_ino) \
            and not stat.S_ISCHR(st.st_mode):
        raise UsageError(f"--out {out}: is the same file as capture's stdout, where the command's own output "
                         "goes; send one of them elsewhere")
    named = command_files(command)
    # capture replaces only a stream (runtime.writes would replace any pt2kit output): said first, unless
    # the file is one the command names, which check_output says
    if st is not None and stat.S_ISREG(st.st_mode) and st.st_size and not is_stream(out) \
            and same_input(st, named) is None:
        raise UsageError(f"--out {out}: exists and is not a pt2kit record stream; capture replaces only a "
                         "stream: remove it or name another file")
    check_output("--out", out, named)
    if st is not None and not stat.S_ISREG(st.st_mode):
        return Target(path=out, fd=_open_device(out))
    folder = Path(os.path.abspath(out)).parent
    if not folder.is_dir():
        raise UsageError(f"--out {out}: no such directory {folder}")
    tmp = folder / f".{Path(out).name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    try:
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    except OSError as e:
        raise UsageError(f"--out {out}: cannot write in {folder}: {e.strerror or e}") from None
    return Target(path=out, tmp=tmp)


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except (OSError, ValueError):
        return None


def _fstat(fd: int) -> os.stat_result | None:
    try:
        return os.fstat(fd)
    except OSError:
        return None


def _open_device(out: str) -> int | None:
    """A device or FIFO, opened and probed now; None for a FIFO nobody reads yet (opened at the end)."""
    try:
        fd = os.open(out, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        if e.errno == errno.ENXIO:
            return None
        raise UsageError(f"--out {out}: cannot write it: {e.strerror or e}") from None
    os.set_blocking(fd, True)
    _probe(fd, f"--out {out}")
    return fd


def _probe(fd: int, what: str) -> None:
    """A write of nothing: refused at once by a full device (/dev/full) or a closed fd."""
    st = _fstat(fd)
    if st is None or stat.S_ISREG(st.st_mode):
        return  # a closed stdout is the user's choice; a regular file takes nothing from a probe
    try:
        os.write(fd, b"")
    except OSError as e:
        if fd != 1:
            os.close(fd)
        raise UsageError(f"{what}: cannot write it: {e.strerror or e}") from None


def deliver(target: Target, data: bytes) -> None:
    """Write the records where they go; OSError when that failed, UsageError when the path may not be
    written now (the command made a file there: runtime.writes); the caller keeps them."""
    if target.tmp is not None:
        target.tmp.unlink(missing_ok=True)  # the check's probe: writing goes through runtime.writes, checked now
        target.tmp = None
        write_output(target.path, data, flag="--out")
        return
    fd = target.fd if target.fd is not None else os.open(target.path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        if fd != 1:
            os.close(fd)
        target.fd = None


def discard(target: Target) -> None:
    """The command never ran (a usage error after the check): remove the temporary file."""
    if target.tmp is not None:
        target.tmp.unlink(missing_ok=True)
    if target.fd not in (None, 1):
        os.close(target.fd)
        target.fd = None


def keep(store_root: Path, run: str, data: bytes) -> Path:
    """Save records that could not be delivered: in the store, else in the temporary directory."""
    for folder in (store_root, Path(tempfile.gettempdir())):
        path = folder / f"capture-{run}.ndjson"
        try:
            with open(path, "xb") as f:
                f.write(data)
            return path
        except OSError:
            continue
    raise OSError(f"cannot save the records in {store_root} nor in {tempfile.gettempdir()}")
