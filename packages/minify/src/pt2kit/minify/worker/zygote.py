"""A fork server: one process imports torch, Dynamo, Inductor and minify's worker once, then forks
each worker and each fresh run of a repro, so none of them pays those seconds of imports again (a
worker a segfault killed is back in milliseconds, and three verification runs cost three compiles,
not three interpreters).

Guarantees:
- a forked process has run nothing but imports, what keys Inductor's caches
  (:func:`pt2kit.runtime.shims.torchapi.inductor_cache_keys`) and the memoising of the answers to Inductor's
  probes of the CPU, which a fork of the server computes (:func:`pt2kit.runtime.shims.torchapi.vec_isa_answers`,
  replayed here), CUDA asked only through NVML: no tensor op, no compile of a graph, no CUDA context, no
  thread of ours. A child forked before the answers came probes for itself, as ``python repro.py`` would
  (:attr:`Zygote.warm` says they came).
  A repro run forked here runs as ``__main__``, with ``sys.argv`` and ``sys.path[0]`` as
  ``python repro.py`` sets them;
- each child gets its own stdin, stdout and stderr (pipes the parent made, passed over a Unix
  socket), its own working directory and environment, and the parent hears how it ended (exit code,
  or minus the signal, as :class:`subprocess.Popen` says it) from this server, which reaps it;
- the server ends when the parent closes the control socket, killing the children left.

Not guaranteed:
- that a child is a fresh interpreter in every respect: more than torch is imported already (Dynamo,
  Inductor's compiler, minify's worker modules), and what torch read from the environment while
  importing (a ``TORCHINDUCTOR_*`` variable read into a config default) is the server's, not the
  environment the child is given (the server imports with ``PYTORCH_NVML_BASED_CUDA_CHECK=1``, which
  torch reads at each call, not into a default; a child has the variable as it was). Callers fork a repro run only where its
  environment is the one the server imported under, less pt2kit's own ``PT2KIT*`` variables (torch
  reads none), and start ``python repro.py`` otherwise;
- that the probes' answers are the child's own: they are the server's prober's, computed once (a fact
  about the machine and installation, unless either changes while minify runs);
- that a child's own children are stopped: close kills the processes it forked, not what they
  started; and where the server itself is killed (SIGKILL), its children are left running while
  :meth:`Child.poll` already reads ``-SIGKILL`` and :meth:`Child.kill` does nothing (a worker still
  ends when its stdin closes; a repro run goes on to its end);
- isolation: a child is the user's process with the user's files and limits, not a sandbox;
- an exit code before the child's pipes are drained: read them to their end before trusting that
  nothing more will come.

Where fork or descriptor passing is missing (Windows), where the imports left CUDA unable to fork, or
with ``PT2KIT_MINIFY_NO_FORK=1`` in the environment, the callers start plain subprocesses instead.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
from typing import IO, Any

# minify's own modules a worker runs (torch's: torchapi.preload)
PRELOAD = ("pt2kit.minify.worker.main", "pt2kit.minify.worker.work", "pt2kit.minify.worker.bisectwork", "pt2kit.runtime.worker.aotgraphs", "pt2kit.runtime.worker.descend",
           "pt2kit.runtime.common.modelfile", "pt2kit.runtime.worker.accuracy")


# -- parent side -----------------------------------------------------------------------------------

class Child:
    """A forked process, with Popen's surface (stdin, stdout, stderr, poll, wait, kill)."""

    def __init__(self, zygote: Zygote, pid: int, stdin: IO[bytes], stdout: IO[bytes], stderr: IO[bytes]) -> None:
        self.zygote, self.pid = zygote, pid
        self.stdin, self.stdout, self.stderr = stdin, stdout, stderr

    def poll(self) -> int | None:
        return self.zygote.exit_code(self.pid, block=False)

    def wait(self, timeout: float | None = None) -> int:
        code = self.zygote.exit_code(self.pid, block=True, timeout=timeout)
        if code is None:
            raise subprocess.TimeoutExpired(f"forked child {self.pid}", timeout or 0)
        return code

    def kill(self) -> None:
        if self.poll() is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


class Zygote:
    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.proc = subprocess.Popen([sys.executable, "-m", "pt2kit.minify.worker.zygote", str(theirs.fileno())],
                                     pass_fds=(theirs.fileno(),), env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL)  # never the parent's stdout: that is the stream
        theirs.close()
        self.sock = ours
        self.spawning = threading.Lock()
        self.cond = threading.Condition()
        self.exits: dict[int, int] = {}
        self.replies: list[dict[str, Any]] = []
        self.gone = False
        self.warm = False
        threading.Thread(target=self._listen, daemon=True).start()

    def _listen(self) -> None:
        while True:
            try:
                data = self.sock.recv(65536)
            except OSError:
                data = b""
            with self.cond:
                if not data:
                    self.gone = True
                    self.cond.notify_all()
                    return
                msg = json.loads(data)
                if "unusable" in msg:  # the server cannot fork safely here: callers start plain processes
                    self.gone = True
                elif "warm" in msg:  # Inductor's CPU probes are answered in the server: its children have them
                    self.warm = True
                elif "exit" in msg:
                    self.exits[msg["exit"]] = msg["code"]
                else:
                    self.replies.append(msg)
                self.cond.notify_all()

    def exit_code(self, pid: int, *, block: bool, timeout: float | None = None) -> int | None:
        with self.cond:
            if block:
                self.cond.wait_for(lambda: pid in self.exits or self.gone, timeout)
            if pid not in self.exits and self.gone:
                return -signal.SIGKILL  # the server went first and killed what it had forked
            return self.exits.get(pid)

    def spawn(self, op: str, *, argv: list[str] | None = None, cwd: str | None = None,
              env: dict[str, str] | None = None) -> Child | None:
        """A worker (``op="worker"``: pool's request loop) or a script run as ``__main__`` (``op="run"``)."""
        ends = [os.pipe() for _ in range(3)]
        child_fds = [ends[0][0], ends[1][1], ends[2][1]]
        try:
            with self.spawning:
                with self.cond:
                    if self.gone:
                        return None
                    self.replies.clear()
                req = {"op": op, "argv": argv or [], "cwd": cwd or os.getcwd(), "env": env or self.env}
                socket.send_fds(self.sock, [json.dumps(req).encode()], child_fds)
                with self.cond:
                    self.cond.wait_for(lambda: self.replies or self.gone)
                    if not self.replies:
                        raise OSError("the fork server ended")
                    pid = self.replies.pop(0)["pid"]
        except OSError:
            for r, w in ends:
                os.close(r)
                os.close(w)
            return None
        for fd in child_fds:
            os.close(fd)
        return Child(self, pid, os.fdopen(ends[0][1], "wb"), os.fdopen(ends[1][0], "rb"), os.fdopen(ends[2][0], "rb"))

    def close(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # close() alone leaves the listener's recv, and the server, waiting
            self.sock.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Served:
    """The fork server a run shares (:mod:`pt2kit.runtime.worker.forkserver`, named in the environment: a test run's,
    say) in a zygote's place: each worker and repro run is forked there, and nothing is imported here for
    them. A request it refuses (another environment) is a fresh process, as without a server."""

    warm = True  # the shared server answered Inductor's probes before it forked anything
    gone = False

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.proc = self  # Early.close kills a zygote's process: there is none of ours

    def spawn(self, op: str, *, argv: list[str] | None = None, cwd: str | None = None,
              env: dict[str, str] | None = None) -> Any:
        from pt2kit.runtime.parent.forkclient import ENV, spawn

        # a repro's run gets no PT2KIT variable (verify): the server is named apart
        return spawn("pt2kit.minify.worker.main" if op == "worker" else None, argv or [], env or self.env, cwd,
                     server=self.env[ENV])

    def kill(self) -> None:
        pass

    def close(self) -> None:
        pass


def start(env: dict[str, str]) -> Zygote | Served | None:
    if not (hasattr(os, "fork") and hasattr(socket, "send_fds") and hasattr(socket, "SOCK_SEQPACKET")):
        return None
    from pt2kit.runtime.parent.forkclient import ENV

    if env.get(ENV):
        return Served(env)
    try:
        return Zygote(env)
    except OSError:
        return None


# -- server side -----------------------------------------------------------------------------------

def _child(req: dict[str, Any], fds: list[int], closing: list[Any]) -> None:
    """In the fork: become the process asked for; never returns."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for c in closing:
            c.close() if hasattr(c, "close") else os.close(c)
        for i, fd in enumerate(fds):
            os.dup2(fd, i)
            os.close(fd)
        os.environ.clear()
        os.environ.update(req["env"])
        from pt2kit.runtime.shims.torchapi import forget_cache_dirs

        forget_cache_dirs()  # the child's Inductor cache folder is its environment's (the script's: Pool's env)
        os.chdir(req["cwd"])
        if req["op"] == "worker":
            from .main import main as worker_main

            code = worker_main()
        else:
            import runpy

            sys.argv = list(req["argv"])
            sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))
            runpy.run_path(sys.argv[0], run_name="__main__")
            code = 0
    except SystemExit as e:
        if isinstance(e.code, int) or e.code is None:
            code = e.code or 0
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        for f in (sys.stdout, sys.stderr):
            try:
                f.flush()
            except Exception:
                pass
        os._exit(code)


def fork_poisoned() -> bool:
    """Whether a child forked now could not use CUDA (torch marks such a fork bad once CUDA was asked
    anything), read in a probe child."""
    pid = os.fork()
    if pid == 0:
        from .torchapi import in_bad_fork

        os._exit(3 if in_bad_fork() else 0)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) != 0


def main(fd: int) -> int:
    # Ctrl-C reaches the whole process group, this server too: minify, its parent, stops and kills it,
    # so a KeyboardInterrupt here would only print a traceback on the user's terminal (each child it
    # forks gets Python's own handler back, as a fresh interpreter has it)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sock = socket.socket(fileno=fd)
    import importlib
    import warnings

    # Python 3.12 warns on every fork of a process with threads; torch's own (OpenMP's) are fork-aware
    warnings.filterwarnings("ignore", message=r".*use of fork\(\) may lead to deadlocks", category=DeprecationWarning)
    from pt2kit.runtime.shims.torchapi import cuda_asked_by_nvml, inductor_cache_keys, replay_vec_isa_answers
    from pt2kit.runtime.worker.forkserver import probe_in_a_fork, read_answers
    from pt2kit.runtime.worker.main import ahead_of_the_job

    from .torchapi import preload

    # minify starts beside the tools upstream: their script keeps the cores. On a CUDA build, torch asks
    # NVML, not the driver, whether CUDA is there: asking the driver would mark every fork bad.
    with ahead_of_the_job(), cuda_asked_by_nvml():
        preload()
        for name in PRELOAD:
            importlib.import_module(name)
        inductor_cache_keys(fork_safe=True)
    if fork_poisoned():
        sock.send(json.dumps({"unusable": "CUDA was initialised while importing"}).encode())
        return 0
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    # Inductor's CPU probes take seconds (a minute on a GPU machine's cold cache) and need threads, which a
    # process that forks must not run: a fork of this server probes, and this one memoises its answers
    # when they come, serving meanwhile (a child forked before then probes for itself, as python would)
    prober, answers_r = probe_in_a_fork([sock, wake_r, wake_w])
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    children: set[int] = set()
    waiting = [sock, wake_r, answers_r]

    def reap() -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid in children:
                children.discard(pid)
                sock.send(json.dumps({"exit": pid, "code": os.waitstatus_to_exitcode(status)}).encode())

    try:
        while True:
            ready, _, _ = select.select(waiting, [], [])
            if wake_r in ready:
                os.read(wake_r, 4096)
                reap()
            if answers_r in ready:
                waiting.remove(answers_r)
                with cuda_asked_by_nvml():
                    replay_vec_isa_answers(read_answers(answers_r))
                sock.send(json.dumps({"warm": True}).encode())
            if sock in ready:
                data, fds, _, _ = socket.recv_fds(sock, 65536, 3)
                if not data:
                    return 0
                pid = os.fork()
                if pid == 0:
                    _child(json.loads(data), fds, [sock, wake_r, wake_w, *waiting[2:]])
                for f in fds:
                    os.close(f)
                children.add(pid)
                sock.send(json.dumps({"pid": pid}).encode())
    except (BrokenPipeError, ConnectionResetError):
        return 0
    finally:
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            os.killpg(prober, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


if __name__ == "__main__":
    code = main(int(sys.argv[1]))
    sys.stderr.flush()
    os._exit(code)  # an interpreter that imported torch takes 1-2 s to tear down, and nothing here needs it
