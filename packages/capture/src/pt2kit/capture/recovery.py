"""``pt2kit.capture.recover()``: the records of a ``with pt2kit.capture()`` block whose process died in it (a
notebook kernel killed by a segfault or SIGFPE in compiled code), read after the restart.

The block's boot writes each graph's model file and manifest line into the scratch dir as it compiles, marks
the compiled call running in a mapped file, and has faulthandler write the fatal signal's report there
(:mod:`pt2kit_capture_running`); the scratch dir outlives the process. ``recover()`` finds the newest one
of the store whose owner process is gone (:func:`pt2kit.runtime.cli.storegc.stale_scratch`) and that a block
left (its ``block.json``), and writes its records as the block's end would have (:meth:`.Capture.finish`):
a `model` per graph, and a `crash` naming the graph whose call was running, with the signal. The result is
a :class:`.Capture` whose ``records``, ``kdiff()``, ``triage()`` ... work as the block's.

Guarantees: only a dead process's scratch dir is read (a live capture's never); it is removed once its
records are written, so a second ``recover()`` finds the one before, or none. Not guaranteed: the signal
where faulthandler was on already before the block (the user's own report; the crash then says the process
died, not of what), or where SIGKILL (the out-of-memory killer) took it.
"""

from __future__ import annotations

import json
import os
import signal
from typing import Any

import msgspec

from pt2kit.runtime.cli.storegc import BLOCK, stale_scratch

from . import runs
from .inprocess import Capture
from .records import read_processes


def recover(store: str | os.PathLike[str] | None = None, quiet: bool = False) -> Capture:
    """The capture of the newest block in ``store`` (default ./pt2kit-out) whose process died in it, its
    records written now. FileNotFoundError where the store holds none."""
    probe = Capture(store=store, quiet=True)
    root = probe.session.store.root
    left = [d for d in stale_scratch(root, float("inf")) if (d / BLOCK).is_file()]
    if not left:
        raise FileNotFoundError(f"pt2kit.capture.recover: {root} holds no block whose process died in it "
                                "(a block that ended has its records in its capture: cap.records)")
    scratch = max(left, key=lambda d: (d / BLOCK).stat().st_mtime)
    block = json.loads((scratch / BLOCK).read_text())
    cap = Capture(store=root, quiet=quiet, **block.get("options", {}))
    cap.job = msgspec.structs.replace(cap.job, command=block.get("command") or cap.job.command)  # the dead one's
    cap.scratch = scratch
    returncode, ended = _death(scratch)
    cap.session.say(f"recovering the block {scratch.name} left: {ended}")
    cap.checker = runs.start()
    cap.finish(returncode, ended)
    return cap


def _death(scratch: Any) -> tuple[int, str]:
    """The return code the block's process died with as the records take it (-N for the signal its
    faulthandler report names; 1 where none does), and the crash's message."""
    pid = (scratch / "owner").read_text().split()[0]
    faults = [p.fault for p in read_processes(scratch) if p.fault]
    if faults:
        return -signal.Signals[faults[0]].value, f"the process running it (pid {pid}) was killed by {faults[0]}"
    return 1, (f"the process running it (pid {pid}) died in it, of what is not known (no fatal signal was "
               "reported: faulthandler was on already, or SIGKILL, the out-of-memory killer's, took it)")
