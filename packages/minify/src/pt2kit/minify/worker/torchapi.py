"""Every private (or moving) torch API minify uses, each behind one small function (tests/test_torchapi.py).

Checked on torch 2.13 (CPU, CI) and 2.11 (the GPU machine); where a name is missing on another torch,
each says what it falls back to. Imports torch only inside each function: the parent stays torch-free.
Exempt by contract: answer.py, verdicts.py, harness.py and loading.py, whose code a repro.py embeds by
source (torch alone, no pt2kit).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any

# What a compile needs of torch beyond ``import torch``, imported once by the zygote before it forks.
# Inductor's import asks CUDA for its devices where torch is built with CUDA, and a process that has
# asked can no longer fork a child that uses CUDA (torch "poisons" the fork): on CPU builds only.
PRELOAD = ("torch._dynamo", "torch._inductor.compile_fx")


def preload() -> None:
    """Import Dynamo and Inductor's compiler, so a forked child does not (on a CUDA build, inside
    ``pt2kit.runtime.shims.torchapi.cuda_asked_by_nvml``: Inductor's imports ask whether CUDA is there)."""
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)


def set_compile_threads(n: int) -> None:
    """How many compilers Inductor runs at once in this process: read from the environment where
    Inductor's config is not imported yet (a CUDA build's fork server leaves it out), set on the
    config where it is."""
    os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = str(n)
    config = sys.modules.get("torch._inductor.config")
    if config is not None:
        config.compile_threads = n  # type: ignore[attr-defined]


def in_bad_fork() -> bool:
    """Whether torch marked this (forked) process unable to use CUDA: ``torch.cuda._is_in_bad_fork``;
    False on a torch without it."""
    import torch

    return bool(getattr(torch.cuda, "_is_in_bad_fork", lambda: False)())


# -- PyTorch's compiler bisector (torch._inductor.compiler_bisector), driven one setting at a time ------

# ConfigChange.config_name -> the config module torch patches for it (the inductor wrapper's options;
# aot_eager_decomp_partition's functorch_config.patch)
_CONFIG_MODULES = {"inductor": "torch._inductor.config", "aot_eager_decomp_partition": "torch._functorch.config"}
BISECT_ENV = ("TORCH_BISECT_BACKEND", "TORCH_BISECT_SUBSYSTEM", "TORCH_BISECT_MAX")


def bisect_plan(backend: str) -> list[dict[str, Any]]:
    """torch's own list of ``backend``'s subsystems, in its order (``BACKENDS``): a counted one as
    ``{"name"}``, a config change as ``{"name", "config": {module: {key: value}}}``. Empty where this
    torch has no bisector or names no such backend."""
    try:
        from torch._inductor import compiler_bisector as cb
    except ImportError:
        return []
    out: list[dict[str, Any]] = []
    for s in getattr(cb, "BACKENDS", {}).get(backend, []):
        if isinstance(s, getattr(cb, "ConfigChange", ())):
            module = _CONFIG_MODULES.get(s.config_name)
            if module is not None:
                out.append({"name": s.name, "config": {module: {s.config_field: s.config_value}}})
        elif isinstance(s, getattr(cb, "BisectSubsystem", ())):
            out.append({"name": s.name})
    return out


def keep_custom_backend() -> Any:
    """A config patch that keeps a backend of the user's own under ``TORCH_BISECT_BACKEND=inductor``
    (torch.compile otherwise swaps it for "inductor"), so a backend that calls Inductor is bisected as
    itself; None on a torch without the switch (then it cannot be)."""
    from torch._inductor import config

    tests = getattr(config, "test_configs", None)
    if tests is None or not hasattr(tests, "bisect_keep_custom_backend_for_inductor"):
        return None
    return config.patch({"test_configs.bisect_keep_custom_backend_for_inductor": True})


@contextlib.contextmanager
def bisect_switch(backend: str, subsystem: str | None, limit: int) -> Iterator[list[tuple[str, int, bool, str | None]]]:
    """In this process, PyTorch's bisector as ``TORCH_BISECT_BACKEND=backend TORCH_BISECT_SUBSYSTEM=subsystem
    TORCH_BISECT_MAX=limit`` sets it in a fresh one: applications 0..limit of the subsystem on, later ones
    off (-1: all off); ``subsystem`` None: nothing switched off, every application of every subsystem of
    ``backend`` counted (a census). Torch reads those variables once (``get_env_val`` is cached) and
    decides ``bisection_enabled`` at import: both are set again here, and put back after. Yields the list
    that receives each application of ``backend``'s subsystems as torch's own ``disable_subsystem`` calls
    announce it: (subsystem, its number, whether it ran, its debug info: the pass's name, the lowered
    node and its op, the decomposed op)."""
    from torch._inductor import compiler_bisector as cb

    bisector = cb.CompilerBisector
    env = {"TORCH_BISECT_BACKEND": backend, **({} if subsystem is None else
                                               {"TORCH_BISECT_SUBSYSTEM": subsystem, "TORCH_BISECT_MAX": str(limit)})}
    before = {k: os.environ.get(k) for k in BISECT_ENV}
    enabled, original = bisector.bisection_enabled, bisector.__dict__["disable_subsystem"]
    seen: list[tuple[str, int, bool, str | None]] = []
    calls: dict[str, int] = {}

    def watched(cls: Any, b: str, s: str, debug_info: Any = None) -> bool:
        off = original.__func__(cls, b, s, debug_info)
        if b == backend and len(seen) < 10000:  # torch counts a subsystem's applications in this order too
            calls[s] = calls.get(s, 0) + 1
            seen.append((s, calls[s] - 1, not off, _debug_info(debug_info)))
        return off

    for k in BISECT_ENV:
        os.environ.pop(k, None)
    os.environ.update(env)
    _reset_bisector(cb)
    bisector.bisection_enabled = True
    bisector.disable_subsystem = classmethod(watched)
    try:
        yield seen
    finally:
        bisector.disable_subsystem = original
        bisector.bisection_enabled = enabled
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        _reset_bisector(cb)


def _reset_bisector(cb: Any) -> None:
    """The bisector's per-process state back to nothing read: its cached environment, its counters."""
    get_env_val = getattr(cb, "get_env_val", None)
    if hasattr(get_env_val, "cache_clear"):
        get_env_val.cache_clear()
    cb.subsystem_call_counter.clear()


def _debug_info(debug_info: Any) -> str | None:
    """torch's debug info of one application (a pass's name; ``repr`` of the node a lowering lowers,
    which is its name alone: its op is added, read from the node the callback holds)."""
    if debug_info is None:
        return None
    try:
        text = str(debug_info())
    except Exception:
        return None
    import torch

    for cell in getattr(debug_info, "__closure__", None) or ():
        try:
            node = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if isinstance(node, torch.fx.Node) and node.op == "call_function":
            return f"{text}: {node.target}"
        if isinstance(node, torch._ops.OpOverload):  # a decomposition's: its repr is <OpOverload(op=..., ...)>
            return str(node)
    return text


def inplace_variant(op: Any) -> Any | None:
    """The in-place overload of a functional aten overload that takes the same arguments and writes its first
    alone (``aten.index_put.default`` -> ``aten.index_put_.default``), read from each overload's ``_schema``;
    None for any other op, or on a torch where the overload or its schema is missing."""
    import torch

    try:
        schema = op._schema
        if schema.name.partition("::")[0] != "aten" or schema.is_mutable:
            return None
        packet = getattr(torch.ops.aten, schema.name.partition("::")[2] + "_")
        inplace = getattr(packet, op._overloadname)
        theirs = inplace._schema.arguments
    except (AttributeError, RuntimeError):
        return None
    ours = schema.arguments
    same = len(ours) == len(theirs) and all(
        (a.name, str(a.type), a.kwarg_only) == (b.name, str(b.type), b.kwarg_only) for a, b in zip(ours, theirs, strict=True))
    writes = [bool(a.alias_info and a.alias_info.is_write) for a in theirs]
    return inplace if same and writes[:1] == [True] and not any(writes[1:]) else None
