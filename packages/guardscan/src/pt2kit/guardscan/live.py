"""Run a model compiled, then with each input variant, and keep the structured trace of it all.

Guarantees:

* Each call is labelled (``example inputs`` or the variant's changes), and every trace event
  carries the label of the call during which it came, so a recompile names its trigger.
* A variant the model itself rejects (eager raises on it) is reported ``invalid`` and skipped: it
  says nothing about the compiler. A variant that eager runs and the compiled model cannot is
  raised, so it ends as a crash, with what was found until then kept in :attr:`Scan.trace`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .tracelog import Trace, event_kind
from .variants import Variant, apply

EXAMPLE = "example inputs"


@dataclass
class Call:
    label: str
    changes: list[str] = field(default_factory=list)
    compiles: list[str] = field(default_factory=list)  # compile ids Dynamo made during the call
    failed: list[str] = field(default_factory=list)  # compile ids that ended without a graph (limit hit)
    outcome: str = "compiled"  # compiled | reused | recompiled | eager | unknown | invalid | unchanged
    error: str | None = None


@dataclass
class Scan:
    trace: Trace = field(default_factory=Trace)
    calls: list[Call] = field(default_factory=list)


def scan(model: Any, inputs: tuple[Any, ...] | dict[str, Any], variants: list[Variant], *, backend: Any = "eager",
         dynamic: bool | None = None, recompile_limit: int | None = None, result: Scan | None = None,
         on_call: Callable[[Call], None] | None = None, before_call: Callable[[str], None] | None = None) -> Scan:
    import torch

    from . import torchapi

    out = result if result is not None else Scan()
    current: list[Call] = []

    def on_event(meta: dict[str, Any], payload: str | None) -> None:
        call = current[-1] if current else None
        out.trace.add(meta, payload, call.label if call else None)
        if call is None:
            return
        kind = event_kind(meta)
        cid = out.trace.events[-1].compile_id if kind != "str" and out.trace.events else None
        if cid and cid not in call.compiles:
            call.compiles.append(cid)
        if kind == "compilation_metrics" and isinstance(meta.get(kind), dict) and meta[kind].get("fail_type"):
            call.failed.append(meta[kind].get("compile_id") or "?")

    def run(fn: Any, args: Any) -> Any:
        return fn(**args) if isinstance(args, dict) else fn(*args)

    torchapi.reset()
    compiled = torch.compile(model, backend=backend, dynamic=dynamic)
    with torchapi.dynamo_patch(recompile_limit), torchapi.capture_trace(on_event):
        first = Call(EXAMPLE)
        if before_call:
            before_call(EXAMPLE)
        current.append(first)
        out.calls.append(first)
        run(compiled, inputs)
        first.outcome = "compiled" if first.compiles else "reused"
        if on_call:
            on_call(first)
        for v in variants:
            new_inputs, changes = apply(v, model, inputs)
            call = Call(", ".join(changes) or v.spec, changes)
            out.calls.append(call)
            if not changes:
                call.outcome = "unchanged"
                if on_call:
                    on_call(call)
                continue
            if before_call:
                before_call(f"eager check of {call.label}")
            try:
                run(model, new_inputs)
            except Exception as e:  # the model itself rejects these inputs
                call.outcome = "invalid"
                call.error = f"{type(e).__name__}: {(str(e).splitlines() or [''])[0]}"[:300]
                if on_call:
                    on_call(call)
                continue
            if before_call:
                before_call(call.label)
            current.append(call)
            run(compiled, new_inputs)
            current.pop()
            made = [c for c in call.compiles if c not in call.failed]
            if call.failed and not made:
                call.outcome = "eager"
            elif made:
                call.outcome = "recompiled"
            elif any(c.failed for c in out.calls):
                # Dynamo no longer tries this frame: a cache hit and an eager run look the same from here
                call.outcome = "unknown"
                call.error = "the recompile limit was hit earlier: this call reused a graph or ran eagerly"
            else:
                call.outcome = "reused"
            if on_call:
                on_call(call)
    return out
