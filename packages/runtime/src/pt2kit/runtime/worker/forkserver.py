"""A fork server for every tool's worker: one process imports torch, Dynamo and Inductor's compiler once
and answers Inductor's CPU probes once, then forks each ``pt2kit.runtime.worker.main`` a tool asks for, so a
worker starts in milliseconds instead of the 4-7 s those imports and probes take on a 2-core machine.

``python -m pt2kit.runtime.worker.forkserver -- CMD ...`` serves while CMD runs (a test run, a script that
pipes several tools), with ``PT2KIT_FORKSERVER`` naming its socket in CMD's environment; a tool whose
environment names a server asks it for its workers (:func:`child.start_worker`, through
:mod:`..parent.forkclient`, the tool's side), and any other tool starts ``python -m pt2kit.runtime.worker.main`` as
before.

Guarantees:

* A forked worker is the process a fresh one would be, where it can tell: the environment, working
  directory, umask, stdin/stdout/stderr and process group are the asking tool's (so Ctrl-C and a kill of
  the tool's group reach it), ``sys.argv`` and ``sys.path[0]`` are what ``python -m`` sets, Python's own
  signal handlers are back, and it watches the tool (not the server) to stop when the tool dies.
* The server forks only where nothing the child would read at import differs: the asking tool's
  interpreter is the server's and its environment is the server's, less :data:`IGNORED` (variables torch
  reads at no import: ours, pytest's, the shell's, Ray's, a Jupyter kernel's) and :data:`READ_WHEN_USED`
  (Inductor's cache folders, which the child reads afresh); a PYTHONPATH of the tool's own is served where
  :mod:`.forkpath` can give the child the ``sys.path`` a fresh Python would have. Otherwise, or where the tool's process group is in
  another session, or where importing initialised CUDA (no fork could use it), the server refuses and
  the tool starts a fresh worker: never a worker whose torch read another environment.
* The server runs nothing but imports, what keys Inductor's caches and the CPU probes' answers (computed
  in a fork of its own, replayed: :func:`pt2kit.runtime.shims.torchapi.replay_vec_isa_answers`) before it
  forks; no tensor op, no compile, no thread of its own (a fork of a threaded process can deadlock).
* When it stops, where it refused anything, one line on stderr counts its forks and its refusals by
  reason (``pt2kit fork server: forked 212, refused 7 (another environment (HOME): 7)``): each refusal
  was a fresh process and its seconds of imports.
* A child's exit code reaches the tool as :class:`subprocess.Popen` says it (minus the signal). Where
  the server dies first, its children are killed and the tool reads ``-SIGKILL``.

Not guaranteed: that the child is a fresh interpreter in every respect (modules are imported already;
what a module computed at import from the clock, the pid or the working directory is the server's);
resource limits (``ulimit``) and the nice value are the server's, not the tool's; isolation between
children (each is the user's process with the user's files).
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
from typing import Any

from ..parent.forkclient import WORKER
from ..shims.torchapi import forget_cache_dirs
from . import forkpath

# variables torch and Python read at no import (or that only name who started us): they may differ
# RAY_: Ray's, read when ray is imported, which the server never does (a worker Ray started carries them)
IGNORED_PREFIXES = ("PT2KIT", "PYTEST_", "RAY_")
# _TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR: an address Inductor writes into os.environ before each C++ module it
# loads (CppPythonBindingsCodeCache), read by that module, never at import: a process that compiled once (a test,
# a notebook) hands it to every tool it starts, and each was refused
# JUPYTER: what a Jupyter kernel sets for the processes it starts (ipykernel: pagers off, colour on, matplotlib's
# inline backend; jupyter_client: its pid and session; debugpy: pydevd's switches): read by a pager, git, matplotlib
# or pydevd when one runs, never at torch's import (the server imports none of them); the child's environment is
# the tool's. A notebook's tools were each refused (11 in a test run)
JUPYTER = frozenset({"CLICOLOR", "CLICOLOR_FORCE", "PAGER", "GIT_PAGER", "JPY_PARENT_PID", "JPY_SESSION_NAME",
                     "MPLBACKEND", "PYDEVD_USE_FRAME_EVAL", "PYDEVD_DISABLE_FILE_VALIDATION"})
# RUN_TIME: read when a repro picks its device (REPRO_DEVICE, ours) or a process group is initialised
# (torch.distributed's rendezvous: MASTER_ADDR, MASTER_PORT), never at an import
RUN_TIME = frozenset({"REPRO_DEVICE", "MASTER_ADDR", "MASTER_PORT"})
IGNORED = frozenset({"PWD", "OLDPWD", "_", "SHLVL", "PS1", "PS2", "PYTHONUNBUFFERED", "COLUMNS", "LINES", "TERM",
                     "NO_COLOR", "FORCE_COLOR", "_TORCHINDUCTOR_PYOBJECT_TENSOR_DATA_PTR", *JUPYTER, *RUN_TIME})
# Inductor's and Triton's cache folders: read where a compile uses them, never at import, and the server compiles
# nothing. A test or a script with a folder of its own was refused (in one run of the test command, 49 fresh
# Pythons); the child forgets anything Inductor memoised of the folder (:func:`..shims.torchapi.forget_cache_dirs`).
READ_WHEN_USED = frozenset({"TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"})
PRELOAD = ("torch", "torch._dynamo", "torch._inductor.compile_fx", WORKER, "pt2kit.runtime.common.modelfile",
           "pt2kit.runtime.worker.accuracy")


def _relevant(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items()
            if k not in IGNORED and k not in READ_WHEN_USED and not k.startswith(IGNORED_PREFIXES)}


def _refusal(req: dict[str, Any], mine: dict[str, str], path: list[str], theirs_path: list[str]) -> str | None:
    """Why the server cannot fork the tool's worker (None: it can); ``path``, ``theirs_path``: the server's and the
    tool's PYTHONPATH entries (:func:`.forkpath.entries`), which may differ (:func:`.forkpath.refusal`)."""
    main = req.get("main")
    if main is not None and not (isinstance(main, str) and main.startswith("pt2kit.")):
        return f"not a pt2kit module ({main!r})"  # the socket is ours, but it runs only our own mains
    if req.get("exe") != sys.executable:
        return f"another interpreter ({req.get('exe')})"
    theirs = _relevant(req.get("env") or {})
    differ = sorted(k for k in set(theirs) | set(mine) if theirs.get(k) != mine.get(k) and k != forkpath.VAR)
    if differ:
        return f"another environment ({', '.join(differ[:5])})"
    return forkpath.refusal(path, theirs_path)


def _child(req: dict[str, Any], fds: list[int], closing: list[Any], path: tuple[list[str], list[str]]) -> None:
    """In the fork: become ``python -m MAIN`` or ``python SCRIPT`` as the tool would have started it (``path``:
    the server's PYTHONPATH entries and the tool's, :func:`.forkpath.child_path`); never returns."""
    try:
        os.setpgid(0, req["pgid"])  # the server does too; whichever runs first, the child is in it
    except OSError:
        os._exit(70)  # the server refuses it and kills this
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        for sig, handler in ((signal.SIGCHLD, signal.SIG_DFL), (signal.SIGTERM, signal.SIG_DFL),
                             (signal.SIGINT, signal.default_int_handler)):
            signal.signal(sig, handler)
        for c in closing:
            c.close() if hasattr(c, "close") else os.close(c)
        for i, fd in enumerate(fds):
            os.dup2(fd, i)
            os.close(fd)
        for stream in (sys.stdout, sys.stderr):
            stream.reconfigure(write_through=True)  # PYTHONUNBUFFERED, which the tool sets, read at startup
        os.environ.clear()
        os.environ.update(req["env"])
        os.chdir(req["cwd"])
        os.umask(req["umask"])
        tempfile.tempdir = None  # TMPDIR is the tool's
        forget_cache_dirs()  # and so are Inductor's cache folders (READ_WHEN_USED)
        forkpath.child_path(*path)
        if req["main"] is None:  # python SCRIPT ARGS
            import runpy

            sys.argv = list(req["argv"])
            sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))
            sys.path[1:1] = req.get("path") or []
            runpy.run_path(sys.argv[0], run_name="__main__")
            code = 0
        else:  # python -m MAIN ARGS
            import importlib

            module = importlib.import_module(req["main"])
            sys.argv = [module.__file__ or req["main"], *req["argv"]]
            sys.path[0] = req["cwd"]
            if req["main"] == WORKER:
                module.PARENT = req["parent"]
            code = module.main()
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            code = e.code or 0
        else:
            print(e.code, file=sys.stderr)
    except BaseException:
        sys.excepthook(*sys.exc_info())  # as python does with an uncaught exception: a script may hook it
    finally:
        for f in (sys.stdout, sys.stderr):
            try:
                f.flush()
            except Exception:
                pass
        os._exit(code)


def probe_in_a_fork(closing: list[Any]) -> tuple[int, int]:
    """(pid, the read end its answers come on): a fork of this server that runs Inductor's CPU probes
    (:func:`pt2kit.runtime.shims.torchapi.vec_isa_answers`, threads and children of their own, which a process
    that forks must not run) at a low priority and writes their answers as JSON."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.close(r)
            for c in closing:
                c.close() if hasattr(c, "close") else os.close(c)
            os.setpgid(0, 0)  # its compilers die with it: the server kills the group
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            os.nice(10)
            from ..shims.torchapi import cuda_asked_by_nvml, vec_isa_answers

            with cuda_asked_by_nvml(), os.fdopen(w, "wb") as out:
                out.write(json.dumps(vec_isa_answers()).encode())
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    try:
        os.setpgid(pid, pid)
    except OSError:
        pass
    os.close(w)
    return pid, r


def read_answers(fd: int) -> dict[str, bool]:
    """The prober's answers ({} where it failed: each child then probes for itself)."""
    with os.fdopen(fd, "rb") as f:
        data = f.read()
    try:
        answers = json.loads(data)
    except ValueError:
        return {}
    return answers if isinstance(answers, dict) else {}


def _warm() -> bool:
    """Import what every worker imports, keyed caches included; False where that initialised CUDA."""
    import importlib
    import warnings

    # Python 3.12 warns on every fork of a process with threads; torch's own (OpenMP's) are fork-aware
    warnings.filterwarnings("ignore", message=r".*use of fork\(\) may lead to deadlocks", category=DeprecationWarning)
    from ..shims.torchapi import cuda_asked_by_nvml, inductor_cache_keys
    from .main import ahead_of_the_job

    # started beside the command it serves (a script a triage runs): the imports take the cores it leaves idle
    with ahead_of_the_job(), cuda_asked_by_nvml():
        for name in PRELOAD:
            importlib.import_module(name)
        inductor_cache_keys(fork_safe=True)
    import torch

    return not (torch.cuda.is_available() and torch.cuda.is_initialized())


class _Server:
    def __init__(self, listener: socket.socket, mine: dict[str, str], path: list[str]) -> None:
        self.listener = listener
        self.mine, self.path = mine, path
        self.conns: list[socket.socket] = []
        self.pids: dict[int, socket.socket] = {}
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        self.prober, self.answers_r = probe_in_a_fork([listener, self.wake_r, self.wake_w])
        self.waiting_answers = True
        self.forked = 0
        self.refused: dict[str, int] = {}  # reason -> how many asked and were refused, for the line at the end

    def summary(self) -> str | None:
        """One line where anything was refused (each refusal was a fresh process and its seconds of imports:
        the line says which environment differed), else None."""
        if not self.refused:
            return None
        why = "; ".join(f"{reason}: {n}" for reason, n in sorted(self.refused.items(), key=lambda kv: -kv[1]))
        return f"pt2kit fork server: forked {self.forked}, refused {sum(self.refused.values())} ({why})"

    def serve(self) -> None:
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        while True:
            watched = [self.listener, self.wake_r, *self.conns, *([self.answers_r] if self.waiting_answers else [])]
            ready, _, _ = select.select(watched, [], [])
            if self.wake_r in ready:
                os.read(self.wake_r, 4096)
                self._reap()
            if self.waiting_answers and self.answers_r in ready:
                self.waiting_answers = False
                from ..shims.torchapi import cuda_asked_by_nvml, replay_vec_isa_answers

                with cuda_asked_by_nvml():
                    replay_vec_isa_answers(read_answers(self.answers_r))
            if self.listener in ready:
                conn, _ = self.listener.accept()
                self.conns.append(conn)
            for conn in [c for c in self.conns if c in ready]:
                self._answer(conn)

    def _answer(self, conn: socket.socket) -> None:
        try:
            data, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
        except OSError:
            data, fds = b"", []
        self.conns.remove(conn)
        if not data or len(fds) != 3:
            for fd in fds:
                os.close(fd)
            conn.close()
            return
        req = json.loads(data)
        theirs_path = forkpath.entries(req.get("env") or {}, req["cwd"])
        reason = _refusal(req, self.mine, self.path, theirs_path)
        pid = None
        if reason is None:
            pid = os.fork()
            if pid == 0:
                _child(req, fds, [self.listener, self.wake_r, self.wake_w, *self.conns, conn,
                                  *([self.answers_r] if self.waiting_answers else [])], (self.path, theirs_path))
            try:
                os.setpgid(pid, req["pgid"])
            except OSError as e:  # the tool's group is in another session: a fresh worker joins it
                os.kill(pid, signal.SIGKILL)
                reason, pid = f"its process group is not ours to join ({e.strerror})", None
        for fd in fds:
            os.close(fd)
        try:
            conn.send(json.dumps({"pid": pid} if pid else {"refused": reason}).encode())
        except OSError:
            pass
        if pid:
            self.forked += 1
            self.pids[pid] = conn
        else:
            self.refused[reason or "?"] = self.refused.get(reason or "?", 0) + 1
            conn.close()

    def _reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.pids.pop(pid, None)
            if conn is not None:
                try:
                    conn.send(json.dumps({"exit": os.waitstatus_to_exitcode(status)}).encode())
                except OSError:
                    pass
                conn.close()

    def close(self) -> None:
        for pid in self.pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            os.killpg(self.prober, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def serve(path: str) -> int:
    """Serve at ``path`` until SIGTERM (or SIGHUP); workers forked meanwhile are killed when it ends."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the command served: it stops us after
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(128)  # a tool that asks while we import waits here, no longer than a fresh worker would
    mine = _relevant(dict(os.environ))  # before the imports: torch sets TORCHINDUCTOR_CACHE_DIR as it reads it
    path = forkpath.entries(os.environ, os.getcwd())  # what this Python put on sys.path at startup
    # while importing, SIGTERM and SIGHUP keep their default (the process ends at once, nothing forked yet): a
    # Python handler would wait for torch's extension to finish loading, seconds of a short triage's end
    if not _warm():
        listener.close()  # every tool now starts fresh workers
        return 0
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda *_: sys.exit(0))
    server = _Server(listener, mine, path)
    try:
        server.serve()
    finally:
        server.close()
        if line := server.summary():
            print(line, file=sys.stderr)
    return 0


def run(command: list[str]) -> int:
    """Run ``command`` with a server beside it, named in its environment; its exit code."""
    from ..parent.forkclient import serving

    with serving(stderr=None) as served:
        try:
            return subprocess.call(command, env={**os.environ, **served})
        except KeyboardInterrupt:
            return 130


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        try:
            code = serve(sys.argv[2])
        except SystemExit as e:  # SIGTERM (while importing, too): out through the os._exit below, not teardown
            code = e.code if isinstance(e.code, int) else 0
    elif sys.argv[1:2] == ["--"] and len(sys.argv) > 2:
        code = run(sys.argv[2:])
    else:
        print("usage: python -m pt2kit.runtime.worker.forkserver -- COMMAND [ARGS...]", file=sys.stderr)
        code = 2
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # an interpreter that imported torch takes seconds to tear down
