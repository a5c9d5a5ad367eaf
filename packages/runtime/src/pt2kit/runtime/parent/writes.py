"""What a tool writes at a path the user named (``-o``, ``--save-package``, ``--out``, the files of
triage's folder): checked before any work and again at the moment it is written, never over one of the
tool's inputs, never over a file this run did not write, and written whole or not at all.

The rule users rely on: pt2kit reads what they have and writes only where they asked; it never writes over
a file it did not write in this run. :class:`Outputs` keeps it for one run (a tool is one process, one run:
:data:`RUN`, which :func:`check_output` and :func:`write_output` use): the inputs it read, what each path
was when it was checked, and the files it wrote.

Guarantees:

* :meth:`Outputs.check` runs before the work: the path is not a directory, its directory exists (or can be
  made: it is, when the file is written) and can be written in, and it is not the same file as any input
  (the model file, a stream file, stdin's file, a backend or profile file, ``--durations``, and the files a
  stream names: :func:`named_by`), compared by device and inode after symlinks are followed, so a link or a
  hard link to an input is caught too ("input file is the same as output file", like gcc). An existing
  regular file is refused unless it is empty (``mktemp``'s) or pt2kit wrote it (:func:`pt2kit_made`: a
  record stream, minify's repro, reportgen's page or summary). That is how a user replaces their previous
  output deliberately: the same ``-o`` again. Anything else they remove, or they name another path. A
  symbolic link that dangles (pt2kit makes no file through a link) or loops is refused.
* :meth:`Outputs.write` checks again at the moment it writes, against every input known by then (a stream
  read since names more): a path that was missing at the check and exists now was made by someone else
  while the run worked (the user's script, under triage) and is refused whatever it holds; one that
  existed is replaced only while it still carries pt2kit's marker, or this run wrote it. A new file is
  written to a temporary name beside it and hard-linked into place (``link(2)`` fails on any existing
  name, a dangling link included), so a file made at the last moment is never replaced; an existing one
  is replaced by a rename (a symlink the user named keeps pointing where it did). A path that is not a
  regular file (``/dev/stdout``, a FIFO) is written in place, never replaced and never created. A folder
  missing at the check is made; one that was there and is gone now (the script removed it) is not made
  again: OSError, and the tool keeps what it would have written where it says.
* :meth:`Outputs.create` opens a new file for a stream (a triage step's stdout) with ``O_EXCL`` and
  ``O_NOFOLLOW``: an existing name, a link included, is refused.
* :func:`check_stdout` refuses a stdout redirected into one of the inputs of a tool that forwards what it
  reads (``pt2kit cat run.ndjson >> run.ndjson`` would read its own output without end).
* Every refusal is a :class:`UsageError` of one line naming the path and why (exit 2); a loop of links is
  one of them (``ELOOP``), never a traceback. Nothing already written is touched by a refusal.

Not guaranteed: durability across a power loss or an OS crash (neither the file nor its directory is
fsynced: a rename survives a killed tool, not a lost page cache); that a file someone swaps in between the
check at the moment and the rename over a marked file is kept (the window is one ``lstat`` to one
``rename``); that a marker proves pt2kit wrote a file (it is a first line anyone can type: it tells our
output from the user's own, not from a forgery); that a path written in place (a FIFO, a device) is
written whole; on a file system without hard links a new file is created with ``O_EXCL`` and written in
place (still never over an existing name, but a killed write leaves it partial); that a relative path a
stream names (``captured.command``) means the file it meant where the stream was written (it is taken
from this working directory). Kept on purpose: an AOT Inductor package (``--save-package``) carries no
marker, so an earlier one is never replaced: the user removes it.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import shutil
import stat
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..common.errors import UsageError

STDIN = "-"
Inputs = Iterable[tuple[str, "str | os.PathLike[str]"]]

# what the first bytes of a file pt2kit wrote say (a record stream is told by its first line, :func:`is_stream`)
MARKERS = (
    re.compile(rb'\A(#![^\n]*\n)?"""A standalone repro made by pt2kit minify '),  # minify's repro.py
    re.compile(rb'<meta name="generator" content="pt2kit '),  # reportgen's pages (report and comparison)
    re.compile(rb"\A(## )?pt2kit report"),  # reportgen's Markdown and text summaries
    re.compile(rb"\A(# )?pt2kit comparison: "),  # reportgen --compare's text and Markdown
    re.compile(rb'\A\{\s*"pt2kit_(report|comparison)": 1'),  # reportgen's JSON (and --compare's)
)
HEAD = 1 << 16  # a header line holds argv and config: read this much of a file to tell whose it is
KEEP = "pt2kit writes over no file of yours: remove it, or name another path"
NOT_OURS = f"exists and is not pt2kit's output (it carries no pt2kit marker); {KEEP}"
MADE = f"was made by someone else while this run worked (it was not there when the run began); {KEEP}"


def _where(flag: str, path: Any) -> str:
    return f"{flag} {path}" if flag else str(path)


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


def _ident(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


def same_input(target: os.stat_result, inputs: Inputs) -> str | None:
    """The first input (``what given``) that is the regular file ``target`` is, else None."""
    if not stat.S_ISREG(target.st_mode):
        return None
    for what, given in inputs:
        st = _input_stat(given)
        if st is not None and _ident(st) == _ident(target):
            return "stdin's file" if str(given) == STDIN else f"{what} {given}"
    return None


def is_stream(path: str | os.PathLike[str]) -> bool:
    """Whether the file's first line is a pt2kit record (a JSON object with a ``kind`` and a version)."""
    import msgspec

    try:
        with open(path, "rb") as f:
            first = f.readline(HEAD)
        line = msgspec.json.decode(first)
    except (OSError, msgspec.DecodeError):
        return False
    return isinstance(line, dict) and isinstance(line.get("kind"), str) and "v" in line


def pt2kit_made(path: str | os.PathLike[str]) -> bool:
    """Whether the regular file at ``path`` carries pt2kit's marker (:data:`MARKERS`, or a record stream's
    first line): output of an earlier run, which a run given the same path may replace."""
    try:
        with open(path, "rb") as f:
            head = f.read(HEAD)
    except OSError:
        return False
    return any(m.search(head) for m in MARKERS) or is_stream(path)


def command_files(command: list[str], what: str = "the command") -> list[tuple[str, str]]:
    """The files a command names: its program and every argument (``--cfg=x.yaml``'s value too)."""
    if not command:
        return []
    named = [(what, shutil.which(command[0]) or command[0])]
    for arg in command[1:]:
        named.append((f"{what}'s argument", arg))
        if arg.startswith("-") and "=" in arg:
            named.append((f"{what}'s argument", arg.split("=", 1)[1]))
    return named


def _file_of(where: str | None) -> str | None:
    """The file of ``FILE:LINE`` or ``FILE.py:NAME``."""
    return where.rpartition(":")[0] or None if where else None


def named_by(model: Any) -> list[tuple[str, str]]:
    """The files a stream's `model` record names, each an input no output may be: the model file, and for a
    graph capture kept, the script's command and its arguments, the compiled function's and the calling
    line's files, the backend's file and each Inductor hook's."""
    named = [("the model file", str(model.file))] if getattr(model, "file", None) else []
    cap = getattr(model, "captured", None)
    if cap is None:
        return named
    named += command_files(list(cap.command), "the captured command")
    for what, where in (("the captured function's file", cap.source), ("the calling file", cap.called_from),
                        ("the backend file", cap.backend_code), *(("the code file", w) for w in
                                                                  (cap.code_settings or {}).values())):
        file = _file_of(where)
        if file:
            named.append((what, file))
    return named


class Outputs:
    """One run's writes: the inputs no output may be, each path's state when it was checked (its identity,
    or None: missing), and the files this run wrote (which it may write again)."""

    def __init__(self, inputs: Inputs = ()) -> None:
        self.inputs: list[tuple[str, str]] = []
        self.checked: dict[str, tuple[int, int] | None] = {}
        self.had_folder: set[str] = set()  # checked paths whose folder was there: one gone since is not remade
        self.wrote: set[tuple[int, int]] = set()
        self.add_inputs(inputs)

    def add_inputs(self, inputs: Inputs) -> None:
        self.inputs += [(what, str(given)) for what, given in inputs]

    def mine(self, st: os.stat_result) -> bool:
        return _ident(st) in self.wrote

    def _target(self, flag: str, given: Path) -> tuple[os.stat_result | None, Path]:
        """What ``given`` is now, links followed (None: missing), and the path to write; one line when a
        link dangles or loops."""
        try:
            st = os.lstat(given)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise self._oserror(flag, given, e) from None
            return None, given  # missing, or a folder on the way is not one: the directory's probe says which
        if not stat.S_ISLNK(st.st_mode):
            return st, given
        try:
            return os.stat(given), Path(os.path.realpath(given))
        except FileNotFoundError:
            raise UsageError(f"{_where(flag, given)}: is a symbolic link to {os.readlink(given)}, which does not "
                             "exist; pt2kit makes no file through a link: name the file itself, or another path") \
                from None
        except OSError as e:
            raise self._oserror(flag, given, e) from None

    @staticmethod
    def _oserror(flag: str, given: Path, e: OSError) -> UsageError:
        if e.errno == errno.ELOOP:
            return UsageError(f"{_where(flag, given)}: is a loop of symbolic links (too many levels); name "
                              "another path")
        return UsageError(f"{_where(flag, given)}: {e.strerror or e}")

    def _vet(self, flag: str, given: Path, st: os.stat_result, inputs: Inputs = ()) -> None:
        """An existing ``given`` that is a directory or an input (``inputs`` first, then those known): one
        line each."""
        if stat.S_ISDIR(st.st_mode):
            raise UsageError(f"{_where(flag, given)}: is a directory; name the file to write")
        clash = same_input(st, [*inputs, *self.inputs])
        if clash:
            real = os.path.realpath(given)
            via = f" (it resolves to {real})" if real != os.path.abspath(given) else ""
            raise UsageError(f"{_where(flag, given)}: is the same file as {clash}{via}; writing it would "
                             "overwrite an input")

    def _replaceable(self, real: Path, st: os.stat_result) -> bool:
        return self.mine(st) or st.st_size == 0 or pt2kit_made(real)

    def check(self, flag: str, path: str | os.PathLike[str], inputs: Inputs = ()) -> Path:
        """``path``, once it is known that writing it later can succeed and loses none of the inputs
        (``(what, path)`` pairs, ``-`` for stdin) nor a file of the user's; UsageError in one line otherwise."""
        inputs = list(inputs)
        given = Path(path)
        st, real = self._target(flag, given)
        self.add_inputs(inputs)
        if st is not None:
            self._vet(flag, given, st, inputs)
            if not stat.S_ISREG(st.st_mode):
                return given  # a device or FIFO the user named: written in place
            if not self._replaceable(real, st):
                raise UsageError(f"{_where(flag, given)}: {NOT_OURS}")
        # a missing directory is made when the file is written (`kdiff ... | minify -o pt2kit-out/repro.py`
        # starts before kdiff has made its store): what must hold now is that it can be
        probe = Path(os.path.realpath(given)).parent
        while not os.path.lexists(probe) and probe != probe.parent:
            probe = probe.parent
        if not os.path.isdir(probe):
            raise UsageError(f"{_where(flag, given)}: {probe} is not a directory")
        if not os.access(probe, os.W_OK | os.X_OK):
            raise UsageError(f"{_where(flag, given)}: cannot write in directory {probe} (permission denied)")
        key = os.path.abspath(given)
        self.checked[key] = None if st is None else _ident(st)
        if os.path.isdir(given.parent):
            self.had_folder.add(key)
        return given

    def write(self, flag: str, path: str | os.PathLike[str], data: str | bytes) -> Path:
        """Write ``data`` at ``path`` (see the module's header), checked at this moment; UsageError in one
        line where it may not be, OSError where the system refuses."""
        given = Path(path)
        body = data.encode() if isinstance(data, str) else data
        st, real = self._target(flag, given)
        if st is None:
            if os.path.abspath(given) in self.had_folder and not os.path.isdir(given.parent):
                raise FileNotFoundError(errno.ENOENT, "its folder was removed while the run worked", str(given.parent))
            given.parent.mkdir(parents=True, exist_ok=True)  # a folder missing at the check: made now
            self._new(flag, given, body)
            return given
        self._vet(flag, given, st)
        if not stat.S_ISREG(st.st_mode):
            fd = os.open(given, os.O_WRONLY | os.O_CLOEXEC)  # never O_CREAT: a device gone is not made a file
            try:
                _write_all(fd, body)
            finally:
                os.close(fd)
            return given
        if not self.mine(st):
            key = os.path.abspath(given)
            if key in self.checked and self.checked[key] is None:
                raise UsageError(f"{_where(flag, given)}: {MADE}")
            if not self._replaceable(real, st):
                raise UsageError(f"{_where(flag, given)}: {NOT_OURS}")
        self._replace(real, body)
        return given

    def create(self, flag: str, path: str | os.PathLike[str]) -> int:
        """A new file's descriptor (write-only, close-on-exec), refused in one line where the name exists."""
        given = Path(path)
        try:
            fd = os.open(given, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except FileExistsError:
            raise UsageError(f"{_where(flag, given)}: exists, and this run did not write it; {KEEP}") from None
        except OSError as e:
            raise self._oserror(flag, given, e) from None
        self.wrote.add(_ident(os.fstat(fd)))
        return fd

    def _tmp(self, beside: Path) -> tuple[Path, int]:
        tmp = beside.with_name(f".{beside.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        return tmp, os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)

    def _new(self, flag: str, given: Path, body: bytes) -> None:
        """``body`` as the new file ``given``: whole, and never over a name made since the check."""
        tmp, fd = self._tmp(given)
        try:
            try:
                _write_all(fd, body)
                ident = _ident(os.fstat(fd))
            finally:
                os.close(fd)
            try:
                os.link(tmp, given)  # fails on any existing name, where a rename would replace it
            except FileExistsError:
                raise UsageError(f"{_where(flag, given)}: {MADE}") from None
            except OSError as e:
                if e.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOSYS):
                    raise
                ident = self._new_in_place(flag, given, body)  # no hard links here: O_EXCL still refuses
            self.wrote.add(ident)
        finally:
            tmp.unlink(missing_ok=True)

    def _new_in_place(self, flag: str, given: Path, body: bytes) -> tuple[int, int]:
        fd = self.create(flag, given)
        try:
            _write_all(fd, body)
            return _ident(os.fstat(fd))
        except BaseException:
            given.unlink(missing_ok=True)
            raise
        finally:
            os.close(fd)

    def _replace(self, real: Path, body: bytes) -> None:
        tmp, fd = self._tmp(real)
        try:
            try:
                _write_all(fd, body)
                ident = _ident(os.fstat(fd))
            finally:
                os.close(fd)
            os.replace(tmp, real)
            self.wrote.add(ident)
        finally:
            tmp.unlink(missing_ok=True)


def _write_all(fd: int, body: bytes) -> None:
    view = memoryview(body)
    while view:
        view = view[os.write(fd, view):]


# this process's run: a tool is one process, and one run of it
RUN = Outputs()


def check_output(flag: str, path: str | os.PathLike[str], inputs: Inputs = ()) -> Path:
    """:meth:`Outputs.check` of this run (:data:`RUN`)."""
    return RUN.check(flag, path, inputs)


def write_output(path: str | os.PathLike[str], data: str | bytes, *, flag: str = "-o", inputs: Inputs = ()) -> Path:
    """:meth:`Outputs.write` of this run (:data:`RUN`), ``inputs`` added to those checked before."""
    RUN.add_inputs(inputs)
    return RUN.write(flag, path, data)


def check_stdout(inputs: Inputs) -> None:
    """UsageError when stdout is a regular file that is also one of ``inputs``."""
    try:
        st = _stat(sys.stdout.fileno())
    except (AttributeError, ValueError, OSError):
        return
    clash = same_input(st, inputs) if st is not None else None
    if clash:
        raise UsageError(f"stdout is the same file as {clash}, which this tool reads; send stdout elsewhere")
