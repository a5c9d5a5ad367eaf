"""The tool's side of the fork server (:mod:`..worker.forkserver`): ask the server that ``PT2KIT_FORKSERVER``
names for a worker or a script (:func:`spawn`), and hold what it forked with the surface of
:class:`subprocess.Popen` that tools use (:class:`Forked`). Separate from the server, which imports torch
and forks: a tool imports this before it knows whether any server is there, so it must stay
standard-library only and cheap (minify's zygote, testkit and :func:`.child.start_worker` import it).
The server's guarantees, and when it refuses (then :func:`spawn` returns None and the tool starts a
fresh process), are in :mod:`..worker.forkserver`'s docstring.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from typing import IO

ENV = "PT2KIT_FORKSERVER"
WORKER = "pt2kit.runtime.worker.main"


class Forked:
    """A worker the server forked, with the surface of :class:`subprocess.Popen` that tools use."""

    def __init__(self, conn: socket.socket, pid: int, argv: list[str], stdin: IO[bytes], stdout: IO[bytes],
                 stderr: IO[bytes]) -> None:
        self.conn, self.pid, self.args = conn, pid, argv
        self.stdin, self.stdout, self.stderr = stdin, stdout, stderr
        self.returncode: int | None = None
        self._done = threading.Event()
        threading.Thread(target=self._hear_exit, daemon=True).start()

    def _hear_exit(self) -> None:
        try:
            data = self.conn.recv(4096)
        except OSError:
            data = b""
        code = json.loads(data)["exit"] if data else -signal.SIGKILL  # the server went first, killing it
        self.returncode = code
        self.conn.close()
        self._done.set()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._done.wait(timeout):
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:  # not reaped yet, so the pid is still this child's
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def spawn_worker(argv: list[str], env: dict[str, str]) -> Forked | None:
    """A worker (``python -m pt2kit.runtime.worker.main ARGV``) forked by the server ``env`` names; None where
    there is none, or it refused (the caller starts a fresh one)."""
    return spawn(WORKER, argv, env)


def spawn(main: str | None, argv: list[str], env: dict[str, str], cwd: str | None = None,
          path: list[str] | tuple[str, ...] = (), server: str | None = None) -> Forked | None:
    """``python -m MAIN ARGV`` (a pt2kit module with a ``main()``: its exit code), or with ``main`` None
    ``python ARGV[0] ARGV[1:]`` (a script run as ``__main__``), forked by the server ``env`` names, in ``cwd``
    (this process's by default), with ``path`` after the script's folder on ``sys.path`` (where PYTHONPATH
    would put it); None where there is none, or it refused (start a fresh process). The server is ``server``
    where given (a child's environment may leave out ours), else the one ``env`` names."""
    where = server or env.get(ENV)
    if not where or not hasattr(socket, "send_fds"):
        return None
    ends = [os.pipe() for _ in range(3)]
    child_fds = [ends[0][0], ends[1][1], ends[2][1]]
    conn = None
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        conn.connect(where)
        umask = os.umask(0o22)
        os.umask(umask)
        req = {"main": main, "argv": argv, "env": env, "cwd": cwd or os.getcwd(), "exe": sys.executable, "path": list(path),
               "pgid": os.getpgrp(), "parent": os.getpid(), "umask": umask}
        socket.send_fds(conn, [json.dumps(req).encode()], child_fds)
        reply = json.loads(conn.recv(65536) or b"{}")
    except (OSError, ValueError):
        reply = {}
    finally:
        for fd in child_fds:
            os.close(fd)
    if "pid" not in reply:
        for fd in (ends[0][1], ends[1][0], ends[2][0]):
            os.close(fd)
        if conn is not None:
            conn.close()
        return None
    assert conn is not None
    shown = [sys.executable, *(["-m", main] if main else []), *argv]
    return Forked(conn, reply["pid"], shown, os.fdopen(ends[0][1], "wb"), os.fdopen(ends[1][0], "rb"),
                  os.fdopen(ends[2][0], "rb"))


@contextlib.contextmanager
def serving(stderr: int | None = subprocess.DEVNULL) -> Iterator[dict[str, str]]:
    """A fork server of this interpreter for the commands run inside the block (``python -m
    pt2kit.runtime.worker.forkserver --serve``, started now, importing at a lower priority while the caller goes
    on): yields the environment to give them (``{PT2KIT_FORKSERVER: socket}``), or ``{}`` where this
    environment names a server already (a test run's, which they inherit) or none started. At the block's
    end the server is stopped (SIGTERM: it kills what it forked) and its folder removed. ``stderr``: where
    its line counting refusals goes."""
    if os.environ.get(ENV) or not hasattr(socket, "send_fds"):
        yield {}
        return
    folder = tempfile.mkdtemp(prefix="pt2kit-fork-")
    path = os.path.join(folder, "socket")
    server = subprocess.Popen([sys.executable, "-m", "pt2kit.runtime.worker.forkserver", "--serve", path],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        for _ in range(200):  # it binds its socket before its imports (a tool asking then waits for them)
            if os.path.exists(path) or server.poll() is not None:
                break
            time.sleep(0.05)
        yield {ENV: path} if server.poll() is None else {}
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        shutil.rmtree(folder, ignore_errors=True)
