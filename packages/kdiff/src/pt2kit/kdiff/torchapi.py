"""Every private (or moving) torch API kdiff uses, each behind one small function (tests/test_torchapi.py).

Checked on torch 2.13 (CPU, CI) and 2.11 (the GPU machine). Guarantees: each function does what its
docstring says on those two versions, and kdiff calls private torch API nowhere else. Not guaranteed:
any other torch version; where one renames or drops an API, the function raises (AttributeError,
ImportError), except :func:`original_module`, which falls back to what it was given.
"""

from __future__ import annotations

from typing import Any


def original_module(fn: Any) -> Any:
    """The module a ``torch.compile`` wrapper (OptimizedModule) wraps; ``fn`` itself for anything else."""
    return getattr(fn, "_orig_mod", fn)


def overload_name(func: Any) -> str:
    """An aten OpOverload's overload: ``"dim"`` for ``aten.max.dim``, ``"default"`` for ``aten.topk.default``."""
    return func._overloadname


def aoti_load(exported: Any, path: str) -> Any:
    """``exported`` (a torch.export ExportedProgram) compiled into an AOT Inductor package at ``path``
    (``torch._inductor.aoti_compile_and_package``) and loaded (``aoti_load_package``): a callable that runs
    it and keeps working once ``path`` is gone (the loader unpacks it). Compiled under its program's lock
    (:func:`pt2kit.runtime.worker.aotilock.compile_package`)."""
    import torch._inductor

    from pt2kit.runtime.worker.aotilock import compile_package

    return torch._inductor.aoti_load_package(compile_package(exported, path))
