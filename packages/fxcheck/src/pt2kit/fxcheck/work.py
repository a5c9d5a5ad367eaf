"""The child-process side of `fxcheck`: load, compile with the checker, run, record."""

from __future__ import annotations

import contextlib
from typing import Any

import msgspec

from pt2kit.runtime.common.outcome import Compiled, model_or_compiler
from pt2kit.runtime.shims.torchapi import reset_dynamo, tree_map
from pt2kit.schema import Graph, Model


class Summary(msgspec.Struct, frozen=True, kw_only=True):
    """What :func:`run` returns for the parent's summary line (a dict across the process boundary; the
    narrator converts it back)."""

    findings: int
    graphs: int  # graphs the checker saw
    nothing_compiled: str | None = None  # Dynamo handed the checker no graph: its reason


def run(payload: dict[str, Any], chan: Any) -> dict[str, Any]:
    from .job import Job

    job = msgspec.convert(payload, Job)
    chan.stage("load")
    import torch

    from pt2kit.runtime.common.config import apply_config
    from pt2kit.runtime.common.modelfile import load_model, model_fields
    from pt2kit.runtime.worker.outputs import flatten

    from . import inductor_code, torchapi
    from .checker import Checker

    profile = job.profile
    backward = bool(job.backward)
    with apply_config(job.config):
        loaded = load_model(job.model, device=job.device, from_stream=job.from_stream, label=job.label)
        fields = model_fields(loaded, job.device, job.config)
        if job.emit_model:  # a piped model record is forwarded already
            chan.emit_new(Model, **fields)
        inputs = loaded.inputs
        if backward and not fields["trainable"]:
            inputs = _inputs_requiring_grad(inputs)
        checker = Checker(profile, strict=False, emit=chan.emit, store=chan.store, run=chan.run,
                          model=loaded.label, inductor=job.inductor, on_stage=chan.stage)
        chan.stage("capture")
        reset_dynamo()
        compiled = torch.compile(loaded.model, backend=checker)
        codes_cm = torchapi.output_code() if job.inductor else contextlib.nullcontext([])
        with codes_cm as codes:
            with contextlib.nullcontext() if backward else torch.no_grad(), Compiled() as watched:
                try:
                    out = loaded.call(compiled, inputs)
                except Exception as e:  # the model's own failure (its eager run fails too) is not the compiler's
                    raise model_or_compiler(loaded.label, "eager run", e, lambda: loaded.call(loaded.model, inputs)) \
                        from None
            if backward:
                chan.stage("backward")
                leaves = [t for _, t in flatten(out) if isinstance(t, torch.Tensor) and t.requires_grad]
                if leaves:
                    torch.autograd.backward(leaves, [torch.ones_like(t) for t in leaves])
        for i, code in enumerate(codes):
            ks = inductor_code.kernels(code)
            chan.emit_new(
                Graph, model=loaded.label, phase="inductor", index=i, nodes=len(ks),
                code=chan.store.put_text(code, "text/x-python", ".py"),
                kernels=[k.name for k in ks],
                blobs=[chan.store.put_text(k.source, "text/plain", inductor_code.suffix(k.kind)) for k in ks],
            )
    return {"findings": len(checker.findings), "graphs": checker.graphs, "nothing_compiled": watched.nothing}


def _inputs_requiring_grad(inputs: Any) -> Any:
    import torch

    def leaf(x: Any) -> Any:
        if isinstance(x, torch.Tensor) and (x.is_floating_point() or x.is_complex()):
            return x.detach().clone().requires_grad_(True)
        return x

    return tree_map(leaf, inputs)
