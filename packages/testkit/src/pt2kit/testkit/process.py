"""Starting a tool the way a user's shell starts a foreground job.

Why: a signal a process ignores stays ignored across fork and exec, and Python starts with SIGINT
ignored (no KeyboardInterrupt, no handler of the tool's) when its parent ignored it. A non-interactive
shell starts a background job (``cmd &``) with SIGINT and SIGQUIT ignored, and so do ``nohup``-style
launchers and some CI runners: under them every tool a test started was deaf to the SIGINT the test
sent, and runtime's SIGINT tests waited out their 60 s. An interactive shell puts them back to their
defaults for the job it runs in the foreground; the child here does the same before exec. SIGHUP is
left as inherited: a test run under ``nohup`` means its tools to outlive the terminal too.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence

from .result import Result

SHELL_RESTORES = (signal.SIGINT, signal.SIGQUIT)


class ToolTimeout(AssertionError):
    """A command outlived its timeout: the message names it and shows its stderr so far."""


def _as_a_shell_starts_it() -> None:
    # runs in the child between fork and exec: only async-signal-safe work (signal() is)
    for sig in SHELL_RESTORES:
        signal.signal(sig, signal.SIG_DFL)


def module(name: str, *args: str) -> list[str]:
    """``python -m name args...`` with the interpreter running the tests (the test venv's)."""
    return [sys.executable, "-m", name, *args]


def popen(argv: Sequence[str | os.PathLike[str]], **kwargs) -> subprocess.Popen:
    """``subprocess.Popen`` with SIGINT and SIGQUIT at their defaults in the child."""
    if "preexec_fn" in kwargs:
        raise TypeError("popen sets preexec_fn itself")
    return subprocess.Popen([os.fspath(a) for a in argv], preexec_fn=_as_a_shell_starts_it, **kwargs)


def run(argv: Sequence[str | os.PathLike[str]], *, stdin: bytes | None = b"", env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None, timeout: float = 600) -> Result:
    """Run ``argv`` to its end, stdin given as bytes (empty by default, as ``< /dev/null``; None
    inherits the test's), stdout and stderr captured. Past ``timeout`` seconds the command is killed
    and :class:`ToolTimeout` raised with its stderr so far."""
    argv = [os.fspath(a) for a in argv]
    p = popen(argv, stdin=subprocess.PIPE if stdin is not None else None, stdout=subprocess.PIPE,
              stderr=subprocess.PIPE, env=None if env is None else dict(env), cwd=cwd)
    with p:
        try:
            out, err = p.communicate(stdin, timeout=timeout)
        except subprocess.TimeoutExpired as e:
            # its stderr so far came with the exception; reading on could wait on a worker of the tool
            # that still holds the pipe
            p.kill()
            p.wait()
            so_far = (e.stderr or b"").decode(errors="replace")
            raise ToolTimeout(f"{' '.join(argv)} ran past {timeout:g}s; its stderr so far:\n{so_far}") from None
        except BaseException:  # a Ctrl-C of the test run: no tool left behind (as subprocess.run)
            p.kill()
            raise
    return Result(p.returncode, out, err.decode(), tuple(argv))
