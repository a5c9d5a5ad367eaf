"""What ``--ref`` and ``--backend`` (old name ``--test``) name, turned into something that runs a model.

``eager`` and ``eager64`` (a float64 copy of the model and inputs, kept in float64 through the
model's own casts: maintainers' reference for telling noise from bugs) run without compiling; every other
name torch registers (``inductor``, ``aot_eager``, ``cudagraphs``, the TESTING_ONLY ones, a third-party
one) is a torch.compile backend by that name; ``aoti`` exports each graph Dynamo hands it and runs it
through an AOT Inductor package (:func:`aoti`); ``FILE.py:NAME`` and ``module:attr`` name any
torch.compile backend callable.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

import torch

from pt2kit.runtime.common.backends import AOTI, check_registered, is_code
from pt2kit.runtime.common.errors import UsageError
from pt2kit.runtime.worker.accuracy import float64_copy, float64_mode, to_float64

__all__ = ["Backend", "aoti", "context", "prepare", "resolve", "to_float64"]

REFS = ("eager", "eager64", "aot_eager", "inductor")


@dataclass
class Backend:
    name: str
    compile: Any = None  # a torch.compile backend (string or callable); None runs eagerly
    float64: bool = False
    narrowed: list[str] = field(default_factory=list)  # float64 side: ops that had no float64 kernel
    # a backward graph goes to this compiler directly, as AOTAutograd hands it one (an aot_autograd
    # backend's bw_compiler, pt2kit_portable.backward_compiler); None: torch.compile of the graph
    backward: Any = None


def resolve(spec: str, *, role: str) -> Backend:
    if spec == "eager":
        return Backend("eager")
    if spec == "eager64":
        if role != "ref":
            raise UsageError("--backend eager64: eager64 is a reference; use it with --ref")
        return Backend("eager64", float64=True)
    if spec in ("aot_eager", "inductor"):
        return Backend(spec, compile=spec)
    if role == "ref":
        raise UsageError(f"--ref {spec}: expected one of {', '.join(REFS)}")
    if not is_code(spec):
        check_registered(spec)
        return Backend(spec, compile=aoti if spec == AOTI else spec)
    from pt2kit.runtime.common.modelfile import backend_callable

    obj = backend_callable(spec, "--backend")
    return Backend(spec, compile=obj)


def context(backend: Backend) -> Any:
    """What a call of this side runs under: float64_mode for a float64 side, nothing otherwise.
    Ops the float64 side had to run in float32 are added to ``backend.narrowed``."""
    if not backend.float64:
        return contextlib.nullcontext()
    return _Float64Context(backend)


class _Float64Context:
    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.mode = float64_mode()

    def __enter__(self) -> Any:
        return self.mode.__enter__()

    def __exit__(self, *exc: Any) -> Any:
        for op in self.mode.narrowed:
            if op not in self.backend.narrowed:
                self.backend.narrowed.append(op)
        return self.mode.__exit__(*exc)


def prepare(model: Any, inputs: Any, backend: Backend) -> tuple[Any, Any]:
    """(callable, inputs) for one side of the comparison; the model is copied, never changed.
    Call it under :func:`context`."""
    if backend.float64:
        return float64_copy(model, inputs)
    if backend.compile is None:
        return model, inputs
    return torch.compile(model, backend=backend.compile), inputs


def aoti(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
    """``--backend aoti`` as a torch.compile backend: each graph Dynamo hands it is exported, compiled
    into an AOT Inductor package and loaded, and its calls run the package (so the whole model and
    :mod:`.localization`'s graphs run as AOT Inductor builds them)."""
    import tempfile

    from .torchapi import aoti_load

    args = tuple(example_inputs)
    with tempfile.TemporaryDirectory(prefix="kdiff-aoti-") as d:
        run = aoti_load(torch.export.export(gm, args, strict=False), f"{d}/graph.pt2")

    def call(*xs: Any) -> Any:
        out = run(*xs)
        return tuple(out) if isinstance(out, list) else out

    return call
