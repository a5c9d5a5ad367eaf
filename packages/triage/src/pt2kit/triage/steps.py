"""One step of the pipeline: a pt2kit tool run as the command it is, its stdin and stdout files of the
folder, and the line a user types to run it by hand; and how triage waits for it.

Waiting follows ``pt2kit capture``'s rule (``timeout --foreground``'s): the step runs in triage's own
process group, so the terminal's Ctrl-C reaches it once, from the terminal; a SIGINT or SIGTERM sent to
triage alone (``kill PID``) is handed to the step. Either way the step ends as the tool ends on it (capture
hands it to the script and still writes the records of what ran), and triage runs no further step.
"""

from __future__ import annotations

import os
import shlex
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path

from pt2kit.runtime.writes import Outputs

SI_KERNEL = 0x80  # si_code of a signal the kernel sent: the terminal's Ctrl-C


@dataclass
class Step:
    name: str  # capture | guardscan | kdiff | minify | reportgen
    argv: list[str]  # as typed: the tool's command name first (``python -m pt2kit.X`` where it has none)
    stdin: Path | None = None
    stdout: Path | None = None
    code: int | None = None  # its exit code, once it ran
    stop: signal.Signals | None = None  # the SIGINT/SIGTERM that ended triage's run during it
    files: list[Path] = field(default_factory=list)  # what it wrote into the folder besides its stream
    run_as: list[str] = field(default_factory=list)  # what runs: argv with its command's words resolved

    def shown(self, cwd: Path) -> str:
        """The command line a user types for this step, paths relative to ``cwd`` where they lie under it."""
        words = shlex.join(self.argv)
        if self.stdin is not None:
            words += f" < {shlex.quote(rel(self.stdin, cwd))}"
        if self.stdout is not None:
            words += f" > {shlex.quote(rel(self.stdout, cwd))}"
        return words


def rel(path: Path, cwd: Path) -> str:
    """``path`` relative to ``cwd`` where it lies under it (what a user types there), else whole."""
    try:
        return str(path.relative_to(cwd))
    except ValueError:
        return str(path)


# each tool's module, for ``python -m`` where its console script is not installed (pt2kit run from source trees)
MODULES = {"pt2kit capture": "pt2kit.capture", "guardscan": "pt2kit.guardscan", "kdiff": "pt2kit.kdiff",
           "minify": "pt2kit.minify", "reportgen": "pt2kit.reportgen"}


def command(name: str) -> tuple[list[str], list[str]]:
    """How to run the tool ``name`` (a key of :data:`MODULES`): (the words shown, the words run). Its console
    script installed beside this Python (triage's own installation) or on PATH: ``name`` itself; else this
    Python's ``-m`` of its module, shown as such, so the line said is still one a user can type."""
    import shutil

    script, *sub = name.split()
    beside = Path(sys.executable).parent / script
    if beside.is_file() and os.access(beside, os.X_OK):
        return [script, *sub], [str(beside), *sub]
    found = shutil.which(script)
    if found is not None:
        return [script, *sub], [found, *sub]
    return [Path(sys.executable).name, "-m", MODULES[name]], [sys.executable, "-m", MODULES[name]]


def run(step: Step, writes: Outputs) -> Step:
    """Run ``step`` to its end; its exit code (and the signal that stopped the run) land on it. Its stdout
    is a new file (``writes`` makes it: an existing name, a link included, is one line)."""
    sigs = {s for s in (signal.SIGINT, signal.SIGTERM) if signal.getsignal(s) is not signal.SIG_IGN}
    sigs.add(signal.SIGCHLD)
    signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
    fds: list[int] = []
    try:
        actions = []
        if step.stdin is not None:
            fds.append(os.open(step.stdin, os.O_RDONLY | os.O_CLOEXEC))
            actions.append((os.POSIX_SPAWN_DUP2, fds[-1], 0))
        if step.stdout is not None:  # a new file: the folder was new or empty
            fds.append(writes.create("", rel(step.stdout, Path.cwd())))
            actions.append((os.POSIX_SPAWN_DUP2, fds[-1], 1))
        argv = step.run_as or step.argv
        pid = os.posix_spawn(argv[0], argv, dict(os.environ), file_actions=actions, setsigmask=(),
                             setsigdef=[signal.SIGPIPE])
        for fd in fds:
            os.close(fd)
        fds.clear()
        step.code = _wait(pid, step, sigs)
        return step
    finally:
        for fd in fds:
            os.close(fd)
        while signal.sigtimedwait(sigs, 0) is not None:  # what came after the step ended: acted on already
            pass
        signal.pthread_sigmask(signal.SIG_UNBLOCK, sigs)


def _wait(pid: int, step: Step, sigs: set[signal.Signals]) -> int:
    while True:
        got, status = os.waitpid(pid, os.WNOHANG)
        if got:
            return os.waitstatus_to_exitcode(status)
        info = signal.sigtimedwait(sigs, 1.0)
        if info is None or info.si_signo == signal.SIGCHLD:
            continue
        step.stop = step.stop or signal.Signals(info.si_signo)
        if info.si_code != SI_KERNEL:  # sent to triage alone: the terminal's reached the step already
            try:
                os.kill(pid, info.si_signo)
            except ProcessLookupError:
                pass
