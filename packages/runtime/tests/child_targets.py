"""Work functions the child-process tests run (imported by the child, so kept in a plain module)."""

from __future__ import annotations

import ctypes
import os

from pt2kit.runtime.errors import UsageError
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
