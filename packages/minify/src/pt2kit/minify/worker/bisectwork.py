"""The child side of minify's bisection (:mod:`..parent.bisect`): one compile of the repro's candidate under one
setting of PyTorch's compiler bisector, judged as the repro is (:func:`.work.query`), in a warm worker.

A setting is a backend (eager, aot_eager, aot_eager_decomp_partition, inductor, or the repro's own), a
config change (in the query's config), or one subsystem switched as ``TORCH_BISECT_BACKEND``,
``TORCH_BISECT_SUBSYSTEM`` and ``TORCH_BISECT_MAX`` switch it (:func:`.torchapi.bisect_switch`); torch's
own ``disable_subsystem`` calls do the switching, nothing here reimplements a pass. The worker's
bisector state is put back after each step, so the next question it answers runs as before.
"""

from __future__ import annotations

import contextlib
from typing import Any

from pt2kit_portable import inductor_decompositions

from . import torchapi, work

# Inductor's FX graph cache and AOTAutograd's would hand back a compile made under another setting (the
# FX graph cache stands aside when the bisector is on; AOTAutograd's does not): both are off. The kernel
# caches stay on: they are keyed by the kernel's source and compile command, so a step whose kernel is one
# an earlier step built loads it instead of compiling it again (post_grad_pass's 13 compiles on a 2-core
# box: 6.2 s with force_disable_caches, 1.1 s so)
NO_CACHES = {"torch._inductor.config": {"fx_graph_cache": "False"},
             "torch._functorch.config": {"enable_autograd_cache": "False"}}


def step(payload: dict[str, Any], send: Any) -> dict[str, Any]:
    """``payload``: {"query": a query's payload, "switch": {"backend", "subsystem", "limit"} or None,
    "keep": keep a backend of the user's own under the switch}. The query's answer, with
    ``applications``: how many the switched subsystem made, and each one's (number, ran, debug info);
    ``installed``: the ops whose decomposition the run put into Inductor's table (:func:`installed`)."""
    query = dict(payload["query"])
    config = {m: dict(s) for m, s in query["config"].items()}
    for module, settings in NO_CACHES.items():
        config.setdefault(module, {}).update(settings)
    query["config"] = config
    switch = payload.get("switch")
    with contextlib.ExitStack() as stack:
        seen: list[Any] = []
        keep = torchapi.keep_custom_backend() if switch is not None and payload.get("keep") else None
        if switch is not None and payload.get("keep") and keep is None:
            switch = None  # this torch would swap the user's backend for Inductor: run it unswitched, and say so
        if switch is not None:
            if keep is not None:
                stack.enter_context(keep)
            seen = stack.enter_context(torchapi.bisect_switch(switch["backend"], switch["subsystem"], switch["limit"]))
        before = dict(inductor_decompositions() or {})
        answer = work.query(query, send)
    return {**answer, "applications": [list(a) for a in seen], "switched": switch is not None,
            "installed": installed(before)}


def installed(before: dict[Any, Any]) -> list[str]:
    """The ops whose decomposition in Inductor's table the run put in or replaced (a backend of the user's
    that installs its own when called; the worker puts the table back after the request)."""
    return sorted(str(op) for op, fn in (inductor_decompositions() or {}).items() if before.get(op) is not fn)


def plan(payload: dict[str, Any], send: Any) -> dict[str, Any]:
    """torch's subsystems of each backend ``payload["backends"]`` names, in its order
    (:func:`.torchapi.bisect_plan`), a config change's value as literal text (how configs cross processes)."""
    from pt2kit.runtime.common.config import literal

    out = {}
    for backend in payload["backends"]:
        steps = torchapi.bisect_plan(backend)
        for s in steps:
            if "config" in s:
                s["config"] = {m: {k: literal(v) for k, v in kv.items()} for m, kv in s["config"].items()}
        out[backend] = steps
    return out


HANDLERS = {"bisect": step, "bisect_plan": plan}
