"""Warm worker processes, crash-safe: each (:mod:`..worker.main`, forked from the :mod:`..worker.zygote` where it can
be) answers requests on stdin until stdin closes; the parent keeps ``jobs`` of them. A worker that dies (segfault, abort, CUDA error,
os._exit) or overruns the timeout is replaced, and its request's answer says how it ended, which is
itself a failure signature. A worker whose CUDA context a query left dead (a device-side assert)
answers, then exits: the next question goes to a fresh one, never to a context that fails whatever
it is asked. Torch is imported once per worker, not once per query.

Protocol, one JSON object a line: the parent writes {"id", "op", "payload"}; the worker writes
{"t": "stage"|"graphs"|..., ...} messages and ends each request with {"t": "done", "result"} or
{"t": "raised", "type", "message"}. The worker's own fd 1 points at stderr, so nothing a model or
compiler prints can corrupt the protocol.
"""

from __future__ import annotations

import collections
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import msgspec

from pt2kit.runtime.common.caches import CacheUse
from pt2kit.runtime.common.flags import usable_cpus
from pt2kit.runtime.worker.forkserver import READ_WHEN_USED
from pt2kit_portable import signal_name

from ..worker import zygote
from ..worker.main import THREADS
from ..worker.zygote import Zygote

STDERR_LINES = 40
# a request running past HANG_TIMES the slowest one answered so far and HANG_SLACK seconds more is stopped: the
# requests of one pool are one graph's runs and its cuts', and one that hangs (a heap the bug corrupted: pytorch
# #181688 hung a cut 300 s, then another, until triage's caller killed it before any repro was written) is no
# repro; the slack is a loaded 2-core box's compile of a cut (20 s where the whole took 5), which stays a candidate
HANG_TIMES, HANG_SLACK = 4.0, 60.0


class Worker:
    def __init__(self, env: dict[str, str], zygote: Zygote | None = None) -> None:
        forked = zygote.spawn("worker", env=env) if zygote is not None else None
        self.proc: Any = forked or subprocess.Popen([sys.executable, "-m", "pt2kit.minify.worker.main"],
                                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                                    stderr=subprocess.PIPE, env=env)
        self.tail: collections.deque[str] = collections.deque(maxlen=STDERR_LINES)
        self.expired = threading.Event()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            self.tail.append(raw.decode("utf-8", "replace").rstrip("\n"))

    def ask(self, op: str, payload: Any, on_message: Callable[[dict[str, Any]], None],
            timeout: float | None) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.tail.clear()
        timer = None
        self.expired.clear()
        began = time.monotonic()
        said: list[dict[str, Any]] = []  # what it told before it died (a query's "eager" message)
        if timeout:
            timer = threading.Timer(timeout, self.expire)
            timer.start()
        try:
            self.proc.stdin.write(msgspec.json.encode({"op": op, "payload": payload}) + b"\n")
            self.proc.stdin.flush()
            for raw in self.proc.stdout:
                msg = msgspec.json.decode(raw)
                if msg.get("t") in ("done", "raised"):
                    return msg
                said.append(msg)
                on_message(msg)
        except (BrokenPipeError, OSError):
            pass
        finally:
            if timer is not None:
                timer.cancel()
        code = self.proc.wait()
        if self.expired.is_set():  # "s": when it was stopped
            return {"t": "timeout", "stderr": "\n".join(self.tail), "s": round(time.monotonic() - began, 1)}
        died = signal_name(code) or f"exit {code}"
        return {"t": "died", "signal": died, "stderr": "\n".join(self.tail), "said": said[-8:]}

    def expire(self) -> None:
        """The request in hand stopped: it answers as one past its timeout."""
        self.expired.set()
        self.kill()

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
                self.proc.wait(timeout=3)
            except (subprocess.TimeoutExpired, OSError):
                self.proc.kill()
                self.proc.wait()


def pool_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a pool's fork server imports torch under (and a repro's verification runs get)."""
    out = dict(os.environ if env is None else env)
    out.setdefault("PYTHONUNBUFFERED", "1")
    return out


class Early:
    """A fork server started while minify still reads its stream: at once where stdin is a pipe (in
    ``capture | minify`` torch's import, at a lower CPU priority, overlaps the user's script: 7.5 s on the
    GPU machine's CPU after a dynamo_compile_error script), else at the first `model` record. A stream that
    names no model costs an import the server makes at that lower priority (about 150 MiB held until
    minify ends). The first pool whose environment it was started under takes it; one nobody takes is
    killed at :meth:`close`."""

    def __init__(self) -> None:
        self.zygote: Zygote | None = None
        self.started = False

    def start(self, *_: Any) -> None:
        if self.started:
            return
        self.started = True
        env = pool_env()
        if not env.get("PT2KIT_MINIFY_NO_FORK"):
            self.zygote = zygote.start(env)

    def take(self, env: dict[str, str]) -> Zygote | None:
        z = self.zygote
        if z is not None and (z.gone or _imported_under(z.env) != _imported_under(env)):
            self.close()
        z, self.zygote = self.zygote, None
        return z

    def close(self) -> None:
        """Killed, not asked to end: it forked nothing, and its import need not finish first (a stream with
        nothing to minify would wait seconds for it)."""
        if self.zygote is not None:
            self.zygote.proc.kill()
            self.zygote.close()
            self.zygote = None


def _imported_under(env: dict[str, str]) -> dict[str, str]:
    """What of ``env`` a fork server's imports read: not the cache folders, which each child reads afresh
    (the zygote's child forgets what was memoised of them), so a pool in the script's folder takes it."""
    return {k: v for k, v in env.items() if k not in READ_WHEN_USED}


class Pool:
    """``jobs`` warm workers; :meth:`map` answers requests in parallel, in order. ``caches``: what their
    compiles read back of Inductor's caches, each answered request's added (:meth:`cache_line`)."""

    def __init__(self, jobs: int, env: dict[str, str] | None = None, timeout: float | None = None,
                 fork: bool = True, early: Early | None = None) -> None:
        self.env = pool_env(env)
        self.timeout = timeout
        forks = fork and not self.env.get("PT2KIT_MINIFY_NO_FORK")
        self.zygote = ((early.take(self.env) if early is not None else None) or zygote.start(self.env)) if forks else None
        share = compile_share(usable_cpus(), max(1, jobs), self.env)
        # the workers' own environment; self.env stays what a repro run gets
        self.worker_env = self.env if share is None else {**self.env, THREADS: str(share)}
        self.workers = [Worker(self.worker_env, self.zygote) for _ in range(max(1, jobs))]
        self.replaced = 0
        self.caches, self.asked = CacheUse({}), collections.Counter[str]()
        self.counting = threading.Lock()
        self.slowest: float | None = None  # seconds of the slowest request answered (done, raised or died)

    def _counted(self, op: str, msg: dict[str, Any]) -> dict[str, Any]:
        if msg.get("t") == "done" and "caches" in msg:
            with self.counting:
                self.caches.add(msg["caches"])
                self.asked[op] += 1
        return msg

    def cache_line(self, modes: list[str]) -> str | None:
        """One line: what the runs answered so far compiled under a max-autotune or reduce-overhead setting
        (``modes``) read back of the script's caches, and their seconds; None where no mode is on."""
        said = [f"{n} {word}{'s' * (n != 1)}" for op, word in (("query", "candidate"), ("localize", "localisation"),
                                                                ("bisect", "bisection step")) if (n := self.asked[op])]
        runs = ", ".join((["the original run"] if self.asked["original"] else []) + said) or "nothing"
        return self.caches.line(modes, f"{runs} compiled", workers=True)

    def limit(self, asked: float | None = None) -> float | None:
        """A request's seconds: the shortest of ``asked``, the pool's timeout and the hang cap (:data:`HANG_TIMES`)."""
        cap = None if self.slowest is None else max(self.slowest * HANG_TIMES, self.slowest + HANG_SLACK)
        return min(filter(None, (asked, self.timeout, cap)), default=None)

    def _asked(self, worker: Worker, op: str, payload: Any, on_message: Callable[[dict[str, Any]], None],
               asked: float | None = None) -> dict[str, Any]:
        began = time.monotonic()
        a = worker.ask(op, payload, on_message, self.limit(asked))
        if a.get("t") != "timeout":
            with self.counting:
                self.slowest = max(self.slowest or 0.0, time.monotonic() - began)
        return self._counted(op, a)

    def _worker(self, i: int) -> Worker:
        if not self.workers[i].alive:
            self.workers[i] = Worker(self.worker_env, self.zygote)
            self.replaced += 1
        return self.workers[i]

    def ask(self, op: str, payload: Any, on_message: Callable[[dict[str, Any]], None] = lambda m: None,
            worker: int = 0) -> dict[str, Any]:
        return self._asked(self._worker(worker), op, payload, on_message)

    def map(self, op: str, payloads: list[Any], first: int = 0, timeout: float | None = None,
            straggle: Callable[[float], float] | None = None) -> list[dict[str, Any]]:
        """On workers ``first`` on (a :class:`Lane` leaves the ones before it to another request); each
        request gets ``timeout`` seconds where given and shorter than the pool's. ``straggle``: once every
        request has started and one has answered, one still running past ``straggle(s)`` seconds, ``s``
        the slowest answered one's, is stopped and answers as a timeout (its siblings ran beside it,
        under the same load: their time is the measure of what it should take)."""
        todo: queue.Queue[tuple[int, Any]] = queue.Queue()
        for item in enumerate(payloads):
            todo.put(item)
        out: list[dict[str, Any]] = [{}] * len(payloads)
        running: dict[int, tuple[Worker, float]] = {}
        took: list[float] = []
        lock = threading.Lock()

        def serve(w: int) -> None:
            while True:
                try:
                    i, payload = todo.get_nowait()
                except queue.Empty:
                    return
                worker = self._worker(w)
                with lock:
                    running[i] = (worker, time.monotonic())
                out[i] = self._asked(worker, op, payload, lambda m: None, timeout)
                with lock:
                    began = running.pop(i)[1]
                    if out[i].get("t") == "done":
                        took.append(time.monotonic() - began)

        threads = [threading.Thread(target=serve, args=(w,), daemon=True)
                   for w in range(first, min(len(self.workers), first + len(payloads)))]
        for t in threads:
            t.start()
        alive = [t for t in threads if t.is_alive()] if straggle is not None else []
        while alive:
            alive[0].join(0.1)
            with lock:
                now, bar = time.monotonic(), straggle(max(took)) if straggle and took and todo.empty() else None
                late = [w for w, began in running.values() if bar is not None and now - began > bar]
            for w in late:
                w.expire()
            alive = [t for t in threads if t.is_alive()]
        for t in threads:
            t.join()
        return out

    def lane(self, first: int) -> Lane:
        return Lane(self, first)

    def close(self) -> None:
        for w in self.workers:
            w.close()
        if self.zygote is not None:
            self.zygote.close()


class Lane:
    """The pool's workers from ``first`` on, asked like a pool: a search that runs beside a request the
    workers before ``first`` are busy with."""

    def __init__(self, pool: Pool, first: int) -> None:
        self.pool, self.first = pool, first

    @property
    def workers(self) -> list[Worker]:
        return self.pool.workers[self.first:]

    def ask(self, op: str, payload: Any, on_message: Callable[[dict[str, Any]], None] = lambda m: None,
            worker: int = 0) -> dict[str, Any]:
        return self.pool.ask(op, payload, on_message, worker=self.first + worker)

    def map(self, op: str, payloads: list[Any], timeout: float | None = None,
            straggle: Callable[[float], float] | None = None) -> list[dict[str, Any]]:
        return self.pool.map(op, payloads, first=self.first, timeout=timeout, straggle=straggle)

    def kill(self) -> None:
        for w in self.workers:
            w.kill()


def compile_share(cores: int, workers: int, env: dict[str, str]) -> int | None:
    """How many compilers each worker's Inductor runs at once; None: Inductor's default, one per core.

    Where the workers outnumber half the cores, the default oversubscribes the machine: on 2 cores
    the original run and the localising compile ran 4 C++ compilers beside their own Python (0.5 s
    of the bench's 10.8); one each there. With more cores a worker keeps the default: the workers
    are seldom all compiling, and an idle one's cores serve the busy one's Triton compiles (an
    H100 box, 16 cores, 4 workers: T5's 202-node graph). The user's TORCHINDUCTOR_COMPILE_THREADS
    wins. Parallelism only: the kernels are the same."""
    if "TORCHINDUCTOR_COMPILE_THREADS" in env or cores // workers >= 2:
        return None
    return 1
