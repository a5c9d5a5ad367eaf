"""A tool started with a standard fd closed (``2>&-``, ``>&-``, ``<&-``), in one leaf module: every tool's
entry (:mod:`.options`) holds the closed ones on /dev/null, and its :class:`~.session.Session` refuses a
closed stdout that its records would go to.

Guarantees:

* After :func:`hold_closed_stdio`, fds 0, 1 and 2 are open: a file or pipe the tool opens never lands on a
  stdio number (a socket on fd 2 took a worker's tracebacks), ``sys.stdout``/``sys.stderr`` are never
  None, and what the tool says goes nowhere instead of onto the record stream.
* The /dev/null held there is inherited: a worker, minify's fork server and everything they start find
  fds 0-2 open (a worker's ``os.dup2(2, 1)`` on a closed fd 2 died, and minify called that a crash).
  :func:`held` names them, for the one command that must see them closed as the user left them
  (``pt2kit capture -- CMD``: closed in CMD again at its spawn).
* :func:`stdout_closed` says whether fd 1 was closed at start: the records have nowhere to go, and the
  Session says so in one line (exit 2) before any work.
"""

from __future__ import annotations

import os
import sys

_HELD: set[int] = set()


def hold_closed_stdio() -> None:
    """Put /dev/null, inheritable, on each of fds 0, 1, 2 that is closed (once per process)."""
    for fd, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
        try:
            os.fstat(fd)
            continue
        except OSError:
            pass
        got = os.open(os.devnull, os.O_RDWR)  # the lowest free number: this one, the lower ones are open
        if got != fd:
            os.close(got)
            continue
        os.set_inheritable(fd, True)
        _HELD.add(fd)
        if getattr(sys, name) is None:
            setattr(sys, name, open(fd, mode, closefd=False))


def held() -> frozenset[int]:
    """The stdio fds that were closed when the tool started (now /dev/null)."""
    return frozenset(_HELD)


def stdout_closed() -> bool:
    """Whether the tool was started with its stdout closed (``>&-``)."""
    return 1 in _HELD
