"""Running a command as if the tool that runs it were not there: its process, its signals, its terminal.

``pt2kit capture`` runs the user's command this way, and ``pt2kit triage`` each tool it runs (one rule, which
both followed apart before: :func:`spawn`, :func:`block`, :func:`wait`, :func:`unblock`). "The tool" below is
the caller.

The design is ``timeout --foreground``'s and tini's, not a process group of its own (which broke
``os.setsid()``, Ctrl-Z and ``/dev/tty``): the command is spawned into the tool's own process group
with every fd the tool inherited, the signal mask cleared and SIGPIPE at its default, and the tool
waits for it with the signals it forwards blocked and read by ``sigtimedwait`` (so it learns who
sent each one).

Guarantees:

* Fds: every fd the tool was given (``3>f``, make's jobserver, systemd's ``LISTEN_FDS``) is the
  command's, at the same number; the tool's own fds are close-on-exec, so the command sees none of them
  (a stdio fd that was closed when the tool started stays closed for the command).
* Terminal: the command is in the terminal's foreground group whenever the tool is (``input()``,
  ``getpass`` through ``/dev/tty`` with stdin piped, pdb); Ctrl-C, Ctrl-\\ and a hangup reach it from
  the terminal, once: the tool does not send them again.
* Job control: Ctrl-Z stops the command and the tool, and the shell gets the terminal back; ``fg``/``bg``
  continue both. A command stopped on its own (``kill -STOP``, a script suspending itself) stops
  the tool with the same signal, and when the tool is continued the command is too.
* Signals sent to the tool alone (``kill PID``: SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2) are
  handed to the command; a second SIGINT/SIGTERM kills its whole tree. A signal the tool was started
  ignoring (``nohup``'s SIGHUP) stays ignored, by the command too. The tool never dies of one while the
  command runs: it waits for the command, then the caller writes the records.
* A timeout and an interrupt stop the whole tree: the tool is a child subreaper (Linux), so a
  process the command started stays its descendant even after ``setsid()`` or a double fork.
* ``os.setsid()``/``setpgid`` work in the command: it is no process group leader.

Not guaranteed: a signal sent to the tool's whole group with ``kill`` (``kill -- -PGID``, a shell's
SIGHUP to its jobs) reaches the command twice, once itself and once from the tool, as with
``timeout --foreground``; processes the command leaves running after it exits normally are left
running, as without the tool; outside Linux, descendants that leave the tree are not followed.
"""

from __future__ import annotations

import ctypes
import functools
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from pt2kit.runtime.parent.stdio import held
from pt2kit_portable import GRACE  # seconds between SIGTERM and SIGKILL, as every pt2kit parent gives

FORWARD = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
_STOPS = (signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU, signal.SIGSTOP)
SI_KERNEL = 0x80  # si_code of a signal the kernel sent: the terminal's Ctrl-C, Ctrl-\, hangup
_PR_SET_CHILD_SUBREAPER = 36


@dataclass
class Outcome:
    """How the command ended, and what the tool was sent while it ran."""

    returncode: int  # the exit status, or -N for signal N (subprocess's convention)
    timed_out: bool = False
    stop: signal.Signals | None = None  # SIGINT/SIGTERM sent to the tool itself (not by the terminal)
    signals: list[str] = field(default_factory=list)


def spawn(argv: list[str], env: dict[str, str], stdout_fd: int | None, stdin_fd: int | None = None) -> int:
    """Start ``argv`` (searched on PATH) with the tool's fds, group and terminal, ``stdin_fd``/``stdout_fd``
    in place of its stdin and stdout where given; its pid."""
    _subreaper()
    actions = [(os.POSIX_SPAWN_DUP2, fd, i) for i, fd in ((0, stdin_fd), (1, stdout_fd)) if fd is not None]
    # a stdio fd closed when the tool started is the command's closed again (every tool holds /dev/null there,
    # inherited, for its own children): after the dup2, which may read it
    actions += [(os.POSIX_SPAWN_CLOSE, fd) for fd in sorted(held())]
    default = [s for s in (signal.SIGPIPE, getattr(signal, "SIGXFSZ", None)) if s is not None]
    return os.posix_spawnp(argv[0], argv, env, file_actions=actions, setsigmask=(), setsigdef=default)


def _subreaper() -> None:
    """Become the reaper of the command's orphans (Linux), so --timeout finds the whole tree."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def watched() -> set[signal.Signals]:
    """The signals the tool reads while the command runs: those it forwards that it was not started
    ignoring (a blocked signal is queued even when ignored), and SIGCHLD."""
    return {s for s in FORWARD if signal.getsignal(s) is not signal.SIG_IGN} | {signal.SIGCHLD}


def block() -> set[signal.Signals]:
    sigs = watched()
    signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
    return sigs


def unblock(sigs: set[signal.Signals]) -> None:
    """Drop what came while the tool was writing (it already acted on the command's end), then unblock."""
    while signal.sigtimedwait(sigs, 0) is not None:
        pass
    signal.pthread_sigmask(signal.SIG_UNBLOCK, sigs)


def wait(pid: int, sigs: set[signal.Signals], timeout: float | None, spare: tuple[int, ...] = ()) -> Outcome:
    """Wait for the command (``pid``), reaping the orphans that come to us, handling stops and signals.
    ``spare``: the tool's own children (capture's run check, importing torch), which a timeout or a Ctrl-C that
    kills the command's tree leaves alone: the check after it needs one."""
    tree = functools.partial(_signal_tree, spare=spare)
    out = Outcome(returncode=0)
    deadline = None if timeout is None else time.monotonic() + timeout
    kill_at: float | None = None
    while True:
        status = _reap(pid)
        if status is not None:
            out.returncode = os.waitstatus_to_exitcode(status)
            break
        now = time.monotonic()
        if deadline is not None and now >= deadline and not out.timed_out:
            out.timed_out, kill_at = True, now + GRACE
            tree(signal.SIGTERM)
        if kill_at is not None and now >= kill_at:
            tree(signal.SIGKILL)
            kill_at = now + 3600
        wake = [t for t in (deadline if not out.timed_out else None, kill_at) if t is not None]
        info = signal.sigtimedwait(sigs, max(0.01, min([*wake, now + 1.0]) - now))
        if info is None or info.si_signo == signal.SIGCHLD:
            continue
        sig = signal.Signals(info.si_signo)
        out.signals.append(sig.name)
        if info.si_code == SI_KERNEL:
            continue  # the terminal sent it to its foreground group: the command has it already
        if sig in (signal.SIGINT, signal.SIGTERM) and out.stop is not None:
            tree(signal.SIGKILL)  # a second one: the user means it
            continue
        if sig in (signal.SIGINT, signal.SIGTERM):
            out.stop = sig
        _send(pid, sig)
    if out.stop is not None or out.timed_out:
        tree(signal.SIGKILL)  # what the command left running (its ranks, compile workers)
    return out


def _reap(pid: int) -> int | None:
    """Reap every child that changed state; the command's wait status once it has ended."""
    ended = None
    while True:
        try:
            got, status = os.waitpid(-1, os.WNOHANG | os.WUNTRACED)
        except ChildProcessError:
            return ended
        if got == 0:
            return ended
        if got != pid:
            continue  # an orphan of the command that came to us (the subreaper) and ended
        if os.WIFSTOPPED(status):
            _stopped_with(pid, os.WSTOPSIG(status))
        else:
            ended = status


def _stopped_with(pid: int, sig: int) -> None:
    """The command stopped: so do we, so the shell gets the terminal back (``timeout --foreground``'s
    way); once continued, continue the command too (when the shell's SIGCONT reached only us)."""
    if _state(pid) != "T":
        return  # continued meanwhile (Ctrl-Z stopped us both, and fg continued us both)
    os.kill(os.getpid(), sig if sig in _STOPS else signal.SIGSTOP)
    if _state(pid) == "T":
        _send(pid, signal.SIGCONT)


def _state(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rpartition(")")[2].split()[0]


def _send(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def descendants(root: int | None = None) -> list[int]:
    """Every process under ``root`` (the tool itself by default), from /proc."""
    root = os.getpid() if root is None else root
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not d.isdigit():
            continue
        try:
            ppid = int(Path(f"/proc/{d}/stat").read_text().rpartition(")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(d))
    out, todo = [], list(children.get(root, ()))
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, ()))
    return out


def _signal_tree(sig: int, spare: tuple[int, ...] = ()) -> None:
    for p in descendants():
        if p not in spare:
            _send(p, sig)
