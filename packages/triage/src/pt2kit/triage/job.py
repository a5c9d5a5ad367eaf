"""triage's options, typed: the one Struct the flags build and :func:`.drive.run` runs (triage loads no
model itself, so it is a plain frozen Struct). A bad value is one line and exit 2 before anything runs."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import msgspec

from pt2kit.runtime.common.errors import UsageError
from pt2kit.runtime.common.flags import check_seconds


class Job(msgspec.Struct, frozen=True, kw_only=True):
    command: list[str]  # the user's command, as given after `--`
    stream: str | None = None  # --from: capture's records, captured before (no command run; 0.5)
    out: str | None = None  # the folder everything lands in; None: a fresh ./triage-N
    store: str | None = None  # --store (every step's); None: OUT/store
    timeout: float | None = None  # each step's --timeout (capture stops the script's tree after it)

    def __post_init__(self) -> None:
        if self.command and self.stream is not None:
            raise UsageError(f"--from {self.stream} and a command: give one (--from: records captured before, which "
                             "triage runs no command for)")
        if not self.command and self.stream is None:
            raise UsageError("no command to run: give it after --, e.g. pt2kit triage -- python train.py (or the "
                             "records pt2kit capture wrote: --from FILE)")
        check_seconds("--timeout", self.timeout)


def fresh_folder(out: str | None, cwd: Path) -> Path:
    """The folder a run writes: ``out`` when it is new or empty (never one holding files: a run never writes
    over another's page, repros or streams; never where stdout or stderr goes), else the first free
    ``triage-N`` under ``cwd`` (a name taken by anything, a dangling link included, is skipped: a link is
    never written through). :func:`make_folder` makes it."""
    if out is None:
        n = 1
        while os.path.lexists(cwd / f"triage-{n}"):
            n += 1
        return cwd / f"triage-{n}"
    path = Path(out)
    _not_stdio(out, path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise UsageError(f"--out {out}: is a symbolic link to {os.readlink(path)}, which does not exist; triage "
                             "makes no folder through a link (give a new folder)") from None
        st = None
    except OSError as e:
        raise _one_line(out, e) from None
    if st is not None and not stat.S_ISDIR(st.st_mode):
        raise UsageError(f"--out {out}: is a file, not a folder (give a new folder)")
    if st is not None and any(path.iterdir()):
        raise UsageError(f"--out {out}: the folder holds files already; triage writes only into a new or "
                         "empty folder (give another --out, or leave it out for a fresh triage-N)")
    if not path.parent.is_dir():
        raise UsageError(f"--out {out}: {path.parent} is no folder")
    return path


def make_folder(path: Path, given: str | None) -> os.stat_result:
    """``path`` made (never through a link: mkdir fails on any name), or the empty folder ``--out`` named;
    what it is, so that a step that removes or swaps it is told apart from it later."""
    try:
        os.mkdir(path)
    except FileExistsError:
        if given is None or not path.is_dir():  # taken since it was chosen
            raise UsageError(f"{given or path}: was made by someone else just now; run triage again") from None
    except OSError as e:
        raise _one_line(given or str(path), e) from None
    return os.stat(path)


def _one_line(out: str, e: OSError) -> UsageError:
    if e.errno == errno.ELOOP:
        return UsageError(f"--out {out}: is a loop of symbolic links (too many levels); give a new folder")
    return UsageError(f"--out {out}: {e.strerror or e}")


def _not_stdio(out: str, path: Path) -> None:
    """``--out X 2> X`` (or ``2> X/log``): the folder would be where triage's own messages (or the script's
    output) go. Told by the file's identity, or by the path the descriptor names (Linux's /proc)."""
    try:
        target = os.path.realpath(path)
        st = os.stat(path)
    except (OSError, ValueError):
        st = None
    for fd, name, redirect in ((2, "stderr", "2>"), (1, "stdout", ">")):
        try:
            mine = os.fstat(fd)
        except OSError:
            continue
        if not stat.S_ISREG(mine.st_mode):
            continue
        try:
            at = os.path.realpath(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            at = ""
        if (st is not None and (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)) or at == target:
            raise UsageError(f"--out {out}: is the file {name} goes to ({redirect} {out}); triage's folder cannot "
                             f"be it: send {name} elsewhere, or give another --out")
        if at.startswith(target.rstrip(os.sep) + os.sep):
            raise UsageError(f"--out {out}: {name} goes to a file inside it ({at}); triage's folder must be its own: "
                             f"send {name} elsewhere, or give another --out")
