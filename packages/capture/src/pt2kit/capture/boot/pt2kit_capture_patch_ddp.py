"""``torch.compile(DDP(model))`` in the capture boot: DDPOptimizer splits the frame's graph per DDP bucket
and hands the user's backend each bucket's graph with FAKE inputs (tensors without values).

Runs inside the user's interpreter: stdlib + torch only. :func:`patch` wraps ``DDPOptimizer.compile_fn``
to keep the whole graph's real inputs while it splits; :func:`real_inputs` gives a bucket's graph those
of its inputs that are the frame's own (the batch, the parameters, by placeholder name).

Guarantees: DDPOptimizer gets the same arguments and its result or exception is passed on unchanged; an
input with no real counterpart (an activation between buckets) stays fake: the writer seeds it and says
so in the model file's header, never writing zeros as if they were data. Not guaranteed: the real value
of a bucket's input whose placeholder name differs from the whole graph's (it is matched by name; else
it stays fake, and is seeded).
"""

from __future__ import annotations

from typing import Any

import pt2kit_capture_process as process
import pt2kit_capture_torchapi as api

# the real inputs of the graphs DDPOptimizer is splitting now, by placeholder name (innermost last)
REAL: list[dict[str, Any]] = []


def patch(module: Any) -> None:
    """``torch.compile(DDP(model))``: DDPOptimizer hands the backend one graph per bucket, its inputs fake.
    The whole graph's real inputs are kept while it splits, so a bucket's inputs that are the frame's own
    (the batch, the parameters) are written with their values; the rest (activations between buckets)
    stay fake and are seeded, as the model file's header says."""
    import functools

    cls = api.ddp_optimizer(module)
    if cls is None or getattr(cls.compile_fn, "_pt2kit_capture", False):
        return
    original = cls.compile_fn

    @functools.wraps(original)
    def compile_fn(self: Any, gm: Any, example_inputs: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            names = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
            real = {n: a for n, a in zip(names, example_inputs, strict=False) if not api.is_fake(a)}
        except Exception:
            real = {}
        REAL.append(real)
        try:
            return original(self, gm, example_inputs, *args, **kwargs)
        finally:
            REAL.pop()

    compile_fn._pt2kit_capture = True
    process.replace(cls, "compile_fn", compile_fn)


def real_inputs(gm: Any, args: list[Any]) -> list[Any]:
    """args, each fake one replaced by the real value of the same placeholder in the graph DDPOptimizer
    is splitting (see patch); the others as they are."""
    if not REAL:
        return args
    names = [n.name for n in gm.graph.nodes if n.op == "placeholder"]
    return [REAL[-1].get(n, a) if api.is_fake(a) else a for n, a in zip(names, args, strict=False)]
