"""What ``--ref`` and ``--test`` name, turned into something that runs a model.

``eager`` and ``eager64`` (a float64 copy of the model and inputs: maintainers' reference for
telling noise from bugs) run without compiling; ``aot_eager`` and ``inductor`` are torch.compile
backends; ``FILE.py:NAME`` and ``module:attr`` name any torch.compile backend callable.
"""

from __future__ import annotations

import copy
import importlib
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._pytree import tree_map

from pt2kit.runtime.errors import UsageError

REFS = ("eager", "eager64", "aot_eager", "inductor")
BUILTIN_TESTS = ("inductor", "aot_eager", "eager")


@dataclass
class Backend:
    name: str
    compile: Any = None  # a torch.compile backend (string or callable); None runs eagerly
    float64: bool = False


def resolve(spec: str, *, role: str) -> Backend:
    if spec == "eager":
        return Backend("eager")
    if spec == "eager64":
        if role != "ref":
            raise UsageError("--test eager64: eager64 is a reference; use it with --ref")
        return Backend("eager64", float64=True)
    if spec in ("aot_eager", "inductor"):
        return Backend(spec, compile=spec)
    if role == "ref":
        raise UsageError(f"--ref {spec}: expected one of {', '.join(REFS)}")
    if ":" not in spec:
        raise UsageError(f"--test {spec}: expected {', '.join(BUILTIN_TESTS)}, FILE.py:NAME or module:attr")
    head, _, attr = spec.rpartition(":")
    if head.endswith(".py"):
        from pt2kit.runtime.modelfile import exec_file, parse_spec

        path, _ = parse_spec(spec)
        if not path.is_file():
            raise UsageError(f"--test {spec}: no such file {path}")
        obj = getattr(exec_file(path.resolve()), attr, None)
    else:
        try:
            obj = getattr(importlib.import_module(head), attr, None)
        except ImportError as e:
            raise UsageError(f"--test {spec}: cannot import {head}: {e}") from None
    if obj is None or not callable(obj):
        raise UsageError(f"--test {spec}: `{attr}` is not a callable torch.compile backend")
    return Backend(spec, compile=obj)


def to_float64(x: Any) -> Any:
    return tree_map(lambda t: t.double() if isinstance(t, torch.Tensor) and t.is_floating_point() else t, x)


def prepare(model: Any, inputs: Any, backend: Backend) -> tuple[Any, Any]:
    """(callable, inputs) for one side of the comparison; the model is copied, never changed."""
    if backend.float64:
        m = copy.deepcopy(model)
        if isinstance(m, torch.nn.Module):
            m = m.double()
        return m, to_float64(inputs)
    if backend.compile is None:
        return model, inputs
    return torch.compile(model, backend=backend.compile), inputs
