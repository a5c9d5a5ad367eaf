"""Every private (or moving) torch API aotiprint uses, each behind one small function (tests/test_torchapi.py).

Checked on torch 2.13 (CPU, CI) and 2.11 (the GPU machine).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch

from pt2kit.runtime.worker import aotilock

PRINTER_KEY = "aot_inductor.debug_intermediate_value_printer"
FILTER_KEY = "aot_inductor.filtered_kernel_names"
MODES = {"save": "1", "stats": "2", "names": "3"}


def printer_config(mode: str, kernels: list[str] | None) -> dict[str, Any]:
    """The Inductor config that turns the intermediate value printer on, in ``mode``."""
    cfg: dict[str, Any] = {PRINTER_KEY: MODES[mode]}
    if kernels:
        cfg[FILTER_KEY] = ",".join(kernels)
    return cfg


def provenance_config() -> dict[str, Any]:
    """Config that makes Inductor say which FX nodes (and user lines) each kernel came from."""
    import torch._inductor.config as c

    if hasattr(c.trace, "provenance_tracking_level"):
        return {"trace.provenance_tracking_level": 1}
    if hasattr(c.trace, "provenance_tracking"):  # older torch: a bool
        return {"trace.provenance_tracking": True}
    return {}


@contextlib.contextmanager
def rewrite_wrapper(fn: Callable[[str, bool], str]) -> Iterator[None]:
    """Pass the wrapper source Inductor generates through ``fn(source, is_cpp)`` before it is compiled."""
    from torch._inductor.graph import GraphLowering

    orig = GraphLowering.codegen

    def codegen(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = orig(self, *args, **kwargs)
        wrapper = result[0] if isinstance(result, tuple) else result
        if isinstance(getattr(wrapper, "value", None), str):
            wrapper.value = fn(wrapper.value, bool(getattr(self, "cpp_wrapper", False)))
        return result

    GraphLowering.codegen = codegen  # type: ignore[method-assign]
    try:
        yield
    finally:
        GraphLowering.codegen = orig  # type: ignore[method-assign]


def inductor_config(cfg: dict[str, Any]) -> contextlib.AbstractContextManager[Any]:
    """Inductor's config set to ``cfg`` (dotted keys) for the block, as it was after it."""
    import torch._inductor.config as c

    return c.patch(cfg)


def op_arguments(func: Any) -> list[Any]:
    """The arguments an aten op overload's schema declares, in order, each with ``name`` and
    ``default_value`` (``func._schema.arguments``)."""
    return list(func._schema.arguments)


def tree_leaves(tree: Any) -> list[Any]:
    """The leaves of a pytree (tuples, lists, dicts, dataclasses torch knows), in its order."""
    from torch.utils._pytree import tree_leaves as leaves

    return leaves(tree)


def compile_package(ep: Any, path: str, config: dict[str, Any]) -> str:
    """AOT Inductor: the ExportedProgram ``ep`` compiled with ``config`` into a package at ``path``, under the
    program's lock (two processes building one program at once can zip each other's half-written files)."""
    return aotilock.compile_package(ep, path, config)


def load_package(path: str, device: str) -> Any:
    """A callable for an AOTI package (the C++ loader runs here: it can segfault)."""
    idx = torch.device(device).index if device.startswith("cuda") else None
    kw = {"device_index": idx} if idx is not None else {}
    return torch._inductor.aoti_load_package(path, **kw)
