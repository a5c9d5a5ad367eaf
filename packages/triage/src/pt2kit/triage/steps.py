"""One step of the pipeline: a pt2kit tool run as the command it is, its stdin and stdout files of the
folder, and the line a user types to run it by hand; and how triage waits for it.

A step runs as ``pt2kit capture`` runs the script, by the same code (:mod:`pt2kit.runtime.parent.foreground`,
``timeout --foreground``'s rule): in triage's own process group, so the terminal's Ctrl-C reaches it once,
from the terminal, and Ctrl-Z gives the shell back; a signal sent to triage alone (``kill PID``) is handed to
the step, and a second SIGINT or SIGTERM kills its tree. The step ends as the tool ends on it (capture
hands it to the script and still writes the records of what ran), and triage runs no further step.
"""

from __future__ import annotations

import os
import shlex
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path

from pt2kit.runtime.parent import foreground
from pt2kit.runtime.parent.writes import Outputs


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
    env: dict[str, str] = field(default_factory=dict)  # added to triage's environment: the fork server's name

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
    """Run ``step`` to its end; its exit code (and the SIGINT/SIGTERM that stopped the run) land on it. Its
    stdout is a new file (``writes`` makes it: an existing name, a link included, is one line)."""
    sigs = foreground.block()
    fds: list[int] = []
    try:
        if step.stdin is not None:
            fds.append(os.open(step.stdin, os.O_RDONLY | os.O_CLOEXEC))
        if step.stdout is not None:  # a new file: the folder was new or empty
            fds.append(writes.create("", rel(step.stdout, Path.cwd())))
        stdin_fd = fds[0] if step.stdin is not None else None
        stdout_fd = fds[-1] if step.stdout is not None else None
        pid = foreground.spawn(step.run_as or step.argv, {**os.environ, **step.env}, stdout_fd, stdin_fd)
        for fd in fds:
            os.close(fd)
        fds.clear()
        end = foreground.wait(pid, sigs, None)
        step.code, step.stop = end.returncode, end.stop
        return step
    finally:
        for fd in fds:
            os.close(fd)
        foreground.unblock(sigs)
