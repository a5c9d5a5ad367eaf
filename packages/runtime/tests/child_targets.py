"""Work functions the child-process tests run (imported by the child, so kept in a plain module)."""

from __future__ import annotations

import ctypes
import os
import signal
import time

from pt2kit.runtime.common.errors import UsageError
from pt2kit.schema import Graph


def emits_and_prints(payload, chan):
    print("model chatter on stdout")  # must not reach the record stream
    chan.stage("capture")
    for i in range(payload["n"]):
        chan.emit_new(Graph, phase="dynamo", index=i, nodes=i + 1)
    return {"graphs": payload["n"]}


def segfaults(payload, chan):
    chan.stage("load")
    chan.emit_new(Graph, phase="dynamo", nodes=1)
    chan.stage("run")
    chan.note("last_kernel", "cpp_fused_relu_0")
    ctypes.string_at(0)


def aborts(payload, chan):
    chan.stage("compile")
    os.abort()


def raises(payload, chan):
    chan.stage("compile")
    raise RuntimeError("inductor lowering failed\nsecond line")


def bad_input(payload, chan):
    chan.stage("load")
    raise UsageError("m.py: defines no `example_inputs`")


def exits_quietly(payload, chan):
    os._exit(0)


def _half_written(payload, chan):
    """A blob caught mid-write: its temporary file exists, named the way atomic_write names it."""
    tmp = chan.store.root / "blobs" / "ab" / f".{'ab' * 32}.txt.{os.getpid()}.0badc0de.tmp"
    tmp.parent.mkdir(parents=True, exist_ok=True)
    tmp.write_bytes(b"partial")
    with open(payload["pidfile"], "w") as f:
        f.write(str(os.getpid()))
    chan.stage("write")


def hangs_mid_write(payload, chan):
    _half_written(payload, chan)
    time.sleep(600)


def hangs_mid_write_deaf(payload, chan):
    """Ignores SIGTERM, as a model stuck in native code does: only SIGKILL stops it."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _half_written(payload, chan)
    while True:
        time.sleep(1)


def imported(payload, chan):
    """Which of ``payload["names"]`` this process had imported when its job came, and its pid."""
    import sys

    return {"pid": os.getpid(), "had": [n in sys.modules for n in payload["names"]]}


def priority(payload, chan):
    """This process's pid and its CPU priority (nice) when its job runs."""
    return {"pid": os.getpid(), "nice": os.getpriority(os.PRIO_PROCESS, 0)}


def probed(payload, chan):
    """Whether Inductor's once-a-process machine probes were answered when the job came (the system's), and
    within payload["wait"] seconds of it without the job asking (the CPU's ISAs: a warmed worker answers
    them in a thread of its own)."""
    import sys
    import time

    mod = sys.modules.get("torch._inductor.cpu_vec_isa")
    codecache = sys.modules.get("torch._inductor.codecache")
    system = bool(codecache and codecache.CacheBase.get_system.cache_info().currsize)
    deadline = time.monotonic() + payload["wait"]
    while not (mod and mod.valid_vec_isa_list.cache_info().currsize) and time.monotonic() < deadline:
        time.sleep(0.1)
    return {"isa": bool(mod and mod.valid_vec_isa_list.cache_info().currsize), "system": system}


def whoami(payload, chan):
    """Who runs the job: the fork server's child (torch imported already) or a fresh worker (not)."""
    import sys

    return {"pid": os.getpid(), "ppid": os.getppid(), "pgid": os.getpgrp(), "cwd": os.getcwd(),
            "torch": "torch" in sys.modules, "tag": os.environ.get("PT2KIT_TEST_TAG"),
            "other": os.environ.get("TEST_OTHER")}


def environ(payload, chan):
    """The worker's environment, parent, imported top-level modules and first sys.path entries."""
    import sys

    return {"ppid": os.getppid(), "env": dict(os.environ), "modules": sorted({m.split(".")[0] for m in sys.modules}),
            "path": sys.path[:3]}


def cache_folders(payload, chan):
    """Where Inductor puts what this worker compiles: its environment's folder, memo included."""
    from torch._inductor.codecache import CacheBase, write

    _, written = write("x = 1\n", "py")
    return {"ppid": os.getppid(), "written": written, "local": str(CacheBase.get_local_cache_path())}


def cache_folder(payload, chan):
    """The Inductor cache folder this worker would compile in (TORCHINDUCTOR_CACHE_DIR as the job left it)."""
    import os

    return os.environ.get("TORCHINDUCTOR_CACHE_DIR")
