"""The child side of :mod:`..parent.child`: ``python -m pt2kit.runtime.worker.main`` (reads its job on stdin).

Guarantees: the job's ``target`` runs in this process's main thread with a :class:`Channel` to the
parent on the original stdout (fd 1 is pointed at stderr first, so the model's prints cannot enter the
stream); a UsageError or StreamError it raises reaches the parent as one usage line (exit 2), anything
else as an exception message (exit 3) with the traceback on stderr; on SIGTERM or SIGINT, and within
a second of the parent dying, it sweeps its temporary files from the store and exits
(:func:`~pt2kit.schema.store.sweep_temp_files`); it exits with ``os._exit``, skipping interpreter
teardown.

Not guaranteed: that a signal is handled while the work is inside native code (Python runs handlers
between bytecodes: the parent's kill after its grace period covers that); that atexit hooks, finally
blocks of the work or buffered output of other threads run at exit; that a message is kept whole past
``MESSAGE_CHARS`` characters.
"""

from __future__ import annotations

import contextlib
import faulthandler
import importlib
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Iterator
from typing import IO, Any

import msgspec

from pt2kit.schema import SCHEMA_MAJOR, Record, Store, StreamError
from pt2kit.schema.store import STORE_ENV, sweep_temp_files

from ..common.caches import ENV, use_script_cache
from ..common.errors import EXIT_INTERRUPTED, EXIT_TERMINATED, UsageError
from ..common.outcome import CannotJudge

MESSAGE_CHARS = 8000


class Channel:
    """What the work uses to talk to the parent: records, stages, notes."""

    def __init__(self, out: IO[bytes], run: str, store: str) -> None:
        self._out = out
        self.run = run
        self.store = Store(store)
        self._enc = msgspec.json.Encoder()

    def _send(self, prefix: bytes, data: bytes) -> None:
        self._out.write(prefix + data + b"\n")
        self._out.flush()

    def make(self, cls: type[Record], **fields: Any) -> Any:
        return cls(v=SCHEMA_MAJOR, run=self.run, **fields)

    def emit(self, rec: Record) -> Record:
        self._send(b"R ", self._enc.encode(rec))
        return rec

    def emit_new(self, cls: type[Record], **fields: Any) -> Any:
        return self.emit(self.make(cls, **fields))

    def stage(self, name: str) -> None:
        self._send(b"M ", self._enc.encode({"t": "stage", "stage": name}))

    def note(self, key: str, value: Any) -> None:
        self._send(b"M ", self._enc.encode({"t": "note", "key": key, "value": value}))

    def _finish(self, msg: dict[str, Any]) -> None:
        self._send(b"M ", self._enc.encode(msg))


def _sweep_and_exit(store: str, code: int = EXIT_TERMINATED) -> None:
    sweep_temp_files(store, os.getpid())
    os._exit(code)


def _on_signal(store: str, code: int) -> Any:
    # Python runs this in the main thread between bytecodes, so no write of ours is half-way through
    # a step here: its temporary file goes, and we leave at once. Raising instead would unwind through
    # native frames (a nanobind callback turns that into std::terminate and a core dump).
    return lambda signum, frame: _sweep_and_exit(store, code)


# the tool this worker works for, where a fork server (not the tool) started it (:mod:`.forkserver`)
PARENT: int | None = None


def _orphan_watch(parent: int, store: str) -> None:
    """Stop when the parent is gone (killed with SIGKILL, say): nobody reads what we make any more."""
    forked = parent != os.getppid()
    while True:
        time.sleep(0.5)
        if (_gone(parent) if forked else os.getppid() != parent):
            _sweep_and_exit(store)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass
    return False


def _preload(argv: list[str]) -> None:
    """``--preload a,b,m:f``: import them (and call ``m.f()``) before the job comes (its parent started us
    early to overlap that); one that fails fails again, reported, where the work imports or needs it."""
    if argv[:1] != ["--preload"] or len(argv) < 2:
        return
    with ahead_of_the_job():
        for name in argv[1].split(","):
            module, _, call = name.partition(":")
            try:
                loaded = importlib.import_module(module)
                if call:
                    getattr(loaded, call)()
            except Exception:
                pass


@contextlib.contextmanager
def ahead_of_the_job() -> Iterator[None]:
    """(2.26) Work done before the job is known (imports, say), at a lower CPU priority, given back after
    where the system lets it: on a busy machine the work ahead takes the cores the user's script leaves
    idle, never the script's own. Where raising a priority needs a privilege this process lacks, what
    follows runs at the lower one."""
    before = _lower_priority(PRELOAD_NICE)
    try:
        yield
    finally:
        if before is not None:
            try:
                os.setpriority(os.PRIO_PROCESS, 0, before)
            except OSError:
                pass


PRELOAD_NICE = 10


def _lower_priority(by: int) -> int | None:
    """This process's priority lowered by ``by``: the one it had, or None where it could not be."""
    try:
        before = os.getpriority(os.PRIO_PROCESS, 0)
        os.setpriority(os.PRIO_PROCESS, 0, before + by)
    except (OSError, AttributeError):  # not POSIX
        return None
    return before


def main() -> int:
    # a cache folder the tool started us in (benchrun's fresh one for a cold compile) is never replaced by the
    # script's: read before any import of torch here sets Inductor's default into the environment
    folder_given = ENV in os.environ
    # Keep the original stdout for messages; anything the model prints goes to stderr instead.
    msg_out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    faulthandler.enable()
    parent = PARENT or os.getppid()
    _preload(sys.argv[1:])
    job = msgspec.json.decode(sys.stdin.buffer.read())
    os.environ[STORE_ENV] = job["store"]  # the run's store, where a setting's debug files go (config.py)
    signal.signal(signal.SIGTERM, _on_signal(job["store"], EXIT_TERMINATED))
    signal.signal(signal.SIGINT, _on_signal(job["store"], EXIT_INTERRUPTED))  # Ctrl-C reaches the whole group
    threading.Thread(target=_orphan_watch, args=(parent, job["store"]), daemon=True).start()
    chan = Channel(msg_out, job["run"], job["store"])
    module, _, func = job["target"].partition(":")
    payload = job["payload"]
    if isinstance(payload, dict) and "script_cache" in payload:  # a piped graph: compiled in its script's cache
        use_script_cache(payload["script_cache"], payload.get("cache_given", False) or folder_given)
    try:
        value = getattr(importlib.import_module(module), func)(job["payload"], chan)
    except (UsageError, StreamError) as e:
        chan._finish({"t": "usage", "message": str(e), "cannot": isinstance(e, CannotJudge)})
        return 2
    except BaseException as e:  # the model or the compiler failed: the parent makes it a crash record
        traceback.print_exc()
        sys.stderr.flush()
        # the whole text: a compiler's first line is often only "backend='inductor' raised:"
        chan._finish({"t": "exc", "type": type(e).__name__, "message": str(e).strip()[:MESSAGE_CHARS]})
        return 3
    chan._finish({"t": "result", "value": value})
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # os._exit: skip interpreter teardown, where torch's atexit hooks have been seen to crash.
    os._exit(code)
