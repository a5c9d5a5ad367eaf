"""Run a piece of work in a child process, so that its death becomes a `crash` record.

Guarantees:

* The work runs as ``target(payload, chan)`` in a fresh ``python -m pt2kit.runtime.worker.main``. Its
  records travel to the parent whole, one line each, on the child's original stdout; the child's
  fd 1 is pointed at stderr first, so a model that prints cannot corrupt the stream.
* The child says which stage it is in (``chan.stage("compile")``) before each step, so a segfault,
  an abort or an uncaught exception is reported with the stage it happened in, the signal or the
  exception, and the last lines of the child's stderr (faulthandler is on: a segfault leaves the
  Python stack there, with the user's line).
* A :class:`~pt2kit.runtime.common.errors.UsageError` raised in the child (a bad model file, say) is raised
  again in the parent, so it ends as one line and exit 2, not as a crash.
* The child never outlives the parent's interest in it: when the parent is interrupted (Ctrl-C,
  SIGTERM) or its ``timeout`` passes, the child is asked to stop (SIGTERM: at its next bytecode it
  removes the temporary files it was writing and exits), given ``GRACE`` seconds, then killed; a child whose parent dies anyway
  (SIGKILL) notices within a second and stops itself. Either way the temporary files a killed child
  left in the store are swept, so an interrupted run leaves no ``.tmp`` file behind.
* The parent never imports torch for this.
* A worker may be started before its job is known (:func:`start_worker`): it imports what it is told
  to (torch, say) while the parent still waits on something else, and :func:`run_in_child` hands it the
  job; one that died meanwhile is replaced by a fresh one, one never used is :func:`stop`-ped.

Not guaranteed:

* Isolation: the child is not a sandbox. It runs with the user's privileges, environment and
  working directory; what a model file does outside the store (files, network, GPU state) stays done.
* Processes the work itself started (Inductor's compile workers, a Triton build) are not tracked:
  they are left to notice their parent's death on their own.
* The crash's stage is the last one the work announced, not necessarily where it died; the stderr
  kept with it is the last ``STDERR_TAIL_LINES`` lines (``STDERR_TAIL_CHARS`` characters), and a
  message the child raised is cut at the worker's ``MESSAGE_CHARS``.
* A child stuck in native code that ignores SIGTERM gets no chance to sweep: it is killed after
  ``GRACE`` seconds and the parent sweeps for it, so a temporary file survives only a parent killed
  at the same moment.
"""

from __future__ import annotations

import collections
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from pt2kit.schema.store import sweep_temp_files
from pt2kit_portable import GRACE, signal_name

from ..common.errors import UsageError
from ..common.outcome import CannotJudge

STDERR_TAIL_LINES = 40
STDERR_TAIL_CHARS = 6000


@dataclass
class ChildResult:
    """What a child run came to: its return value, or a crash (fields of a `crash` record)."""

    value: Any = None
    crash: dict[str, Any] | None = None
    notes: dict[str, Any] = field(default_factory=dict)
    stage: str = "start"

    @property
    def ok(self) -> bool:
        return self.crash is None


def _pump_stderr(pipe: Any, tail: collections.deque[str], echo: bool, hush: threading.Event) -> None:
    # in pieces of at most 64 KiB: a model printing without newlines must not fill our memory
    for raw in iter(lambda: pipe.readline(1 << 16), b""):
        text = raw.decode("utf-8", "replace")
        tail.append(text)
        if echo and not hush.is_set():
            try:
                sys.stderr.write(text)
                sys.stderr.flush()
            except (OSError, ValueError):
                pass


def stop(proc: subprocess.Popen[bytes], grace: float = GRACE) -> None:
    """Ask the child to stop, then make it: SIGTERM, ``grace`` seconds, SIGKILL."""
    if proc.poll() is not None:
        return
    try:
        proc.terminate()
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    except OSError:
        pass


# what a tool's worker imports ahead of a piped model (Session.warm): on a 2-core box torch takes 2.3 s,
# Dynamo 2.1 s and Inductor's compiler 1.8 s, which a compiling tool's job imports anyway; then Inductor's
# once-a-process machine probes (torchapi.warm_inductor), which its first compile would pay
COMPILER = ("torch", "torch._dynamo", "torch._inductor.compile_fx", "pt2kit.runtime.shims.torchapi:warm_inductor")


def start_worker(env: dict[str, str] | None = None, preload: tuple[str, ...] = ()) -> subprocess.Popen[bytes]:
    """A ``python -m pt2kit.runtime.worker.main`` that imports ``preload`` at once (``module:function``: imports
    the module and calls the function), then waits for its job: the
    import overlaps whatever the parent waits for before it knows the job (the user's script, in capture)."""
    child_env = dict(os.environ if env is None else env)
    child_env.setdefault("PYTHONUNBUFFERED", "1")
    args = ["--preload", ",".join(preload)] if preload else []
    from .forkclient import spawn_worker

    forked = spawn_worker(args, child_env)  # where a fork server serves this environment (a test run's)
    if forked is not None:
        return forked  # type: ignore[return-value]  # Popen's surface
    argv = [sys.executable, "-m", "pt2kit.runtime.worker.main", *args]
    return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env)


def run_in_child(
    target: str,
    payload: dict[str, Any],
    *,
    run: str,
    store: str,
    on_record: Callable[[bytes], None],
    quiet: bool = False,
    env: dict[str, str] | None = None,
    timeout: float | None = None,
    on_stage: Callable[[str], None] | None = None,
    proc: subprocess.Popen[bytes] | None = None,
) -> ChildResult:
    """Run ``target`` ("package.module:function") in a child and collect what it says: in ``proc`` (from
    :func:`start_worker`, with the environment it was started under) where it is still alive, else in a
    fresh one."""
    if proc is None or proc.poll() is not None:
        proc = start_worker(env)
    tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
    hush = threading.Event()  # set while we stop the child: what it says then is not news
    pump = threading.Thread(target=_pump_stderr, args=(proc.stderr, tail, not quiet, hush), daemon=True)
    pump.start()
    result = ChildResult()
    usage: dict[str, Any] | None = None
    exc: dict[str, Any] | None = None
    got_result = False
    timer = None
    timed_out = threading.Event()
    if timeout:
        def expire() -> None:
            timed_out.set()
            stop(proc)

        timer = threading.Timer(timeout, expire)
        timer.daemon = True
        timer.start()
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(msgspec.json.encode({"target": target, "payload": payload, "run": run, "store": store}))
        proc.stdin.close()
        for raw in proc.stdout:
            if raw.startswith(b"R "):
                on_record(raw[2:])
                continue
            if not raw.startswith(b"M "):
                continue
            msg = msgspec.json.decode(raw[2:])
            t = msg.get("t")
            if t == "stage":
                result.stage = msg["stage"]
                if on_stage is not None:
                    on_stage(result.stage)
            elif t == "note":
                result.notes[msg["key"]] = msg["value"]
            elif t == "result":
                result.value = msg.get("value")
                got_result = True
            elif t == "usage":
                usage = msg  # its message; "cannot": a model this check cannot judge (the next one still runs)
            elif t == "exc":
                exc = msg
        proc.wait()
    except BaseException:
        hush.set()
        stop(proc)
        raise
    finally:
        if timer is not None:
            timer.cancel()
        pump.join(timeout=5)
        sweep_temp_files(store, proc.pid)  # a child killed mid-write leaves its temporary file
    if usage is not None:
        raise (CannotJudge if usage.get("cannot") else UsageError)(usage["message"])
    if proc.returncode == 0 and got_result:
        return result
    stderr_tail = "".join(tail)[-STDERR_TAIL_CHARS:]
    crash: dict[str, Any] = {
        "stage": result.stage,
        "exitcode": proc.returncode,
        "signal": signal_name(proc.returncode),
        "stderr_tail": stderr_tail,
    }
    if exc is not None:
        crash["exception"] = exc.get("type")
        crash["message"] = exc.get("message")
    elif crash["signal"]:
        crash["message"] = f"child process killed by {crash['signal']} during {result.stage}"
    else:
        crash["message"] = f"child process exited with code {proc.returncode} during {result.stage}"
    if timed_out.is_set():
        crash["message"] = f"timed out after {timeout:g}s during {result.stage}"
        crash["exception"] = None
    if "last_kernel" in result.notes:
        crash["last_kernel"] = result.notes["last_kernel"]
    result.crash = crash
    return result
