"""Every private torch API the capture boot uses, each behind one small function.

Runs inside the user's interpreter: stdlib + torch only. Each function is tolerant of its API being
absent or changed (torch 2.13 here, 2.11 on the GPU machine): it returns a fallback (None, {}, the
plain value) instead of raising, because capture must never break the user's program.

Guarantees: importing this module imports nothing but the stdlib; torch is imported by the functions
that need it, when called.
"""

from __future__ import annotations

import os
import re
import sys
import sysconfig
from typing import Any

AFTER_DYNAMO = "torch._dynamo.repro.after_dynamo"  # defines wrap_backend_debug, imported at call time
AOTI_MODULE = "torch._inductor"  # defines aoti_compile_and_package
DDP_MODULE = "torch._dynamo.backends.distributed"  # DDPOptimizer: torch.compile(DDP(model))'s graph splitter


def compile_wrapper_classes(torch: Any) -> list[type]:
    """torch.compile's backend wrappers (``torch._TorchCompileInductorWrapper``, ``_TorchCompileWrapper``):
    their ``__init__`` sees ``mode`` and ``options``, which the inductor wrapper does not keep."""
    names = ("_TorchCompileInductorWrapper", "_TorchCompileWrapper")
    return [c for c in (getattr(torch, n, None) for n in names) if isinstance(c, type)]


def mode_options(mode: str | None, dynamic: bool | None) -> dict[str, Any]:
    """The Inductor settings torch.compile's ``mode`` stands for, as its wrapper applies them
    (``torch._inductor.list_mode_options``); {} for no mode, or where this torch has no such function."""
    if not mode:
        return {}
    try:
        import torch._inductor

        return dict(torch._inductor.list_mode_options(mode, dynamic))
    except Exception:
        return {}


def compile_id(gm: Any) -> str | None:
    """Dynamo's compile id of the graph being compiled, as tlparse writes it ("0/1")."""
    cid = getattr(gm, "meta", {}).get("dynamo_compile_id")
    if cid is None:
        try:
            from torch._guards import CompileContext

            cid = CompileContext.current_compile_id()
        except Exception:
            return None
    return None if cid is None else str(cid)


def frame_code(gm: Any) -> tuple[str, str, int] | None:
    """(function, file, line) of the user's code Dynamo is compiling, never torch's own: the first code
    object the tracing context traced (``TracingContext.traced_code``) that lies outside torch (the
    user's module ``forward``, not Dynamo's ``wrap_inline`` ``inner`` nor ``nn.Sequential.forward``),
    else the first user frame of the graph's nodes' stack traces, else of its compile reason, else the
    user's frame that called the compiled function (a torch module compiled whole: the script's line)."""
    try:
        from torch._guards import TracingContext

        ctx = TracingContext.try_get()
        for code in getattr(ctx, "traced_code", None) or []:
            if user_file(code.co_filename):
                return code.co_name, code.co_filename, code.co_firstlineno
    except Exception:
        pass
    for node in getattr(getattr(gm, "graph", None), "nodes", ()):
        for file, line, name in _STACK_LINE.findall(node.meta.get("stack_trace") or ""):
            if user_file(file):
                return name, file, int(line)
    stack = getattr(getattr(gm, "compile_subgraph_reason", None), "user_stack", None) or []
    for frame in stack:
        if user_file(frame.filename):
            return frame.name, frame.filename, frame.lineno
    # outward from the backend (ours, or the one calling us) past Dynamo's frames to the caller's
    frame, in_torch = sys._getframe(1), False
    while frame is not None:
        if in_torch and user_file(frame.f_code.co_filename):
            return frame.f_code.co_name, frame.f_code.co_filename, frame.f_lineno
        in_torch = in_torch or _in_torch(frame.f_code.co_filename)
        frame = frame.f_back
    return None


_STACK_LINE = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


def user_file(path: str) -> bool:
    """Whether code in ``path`` is the user's: not torch's, this boot's, nor the standard library's
    (site-packages other than torch's are the user's: a transformers model is what they compiled)."""
    if not path or path.startswith("<frozen") or _in_torch(path) or _under(path, os.path.dirname(__file__)):
        return False
    paths = sysconfig.get_paths()
    return not _under(path, paths.get("stdlib")) or any(_under(path, paths.get(k)) for k in ("purelib", "platlib"))


def _in_torch(path: str) -> bool:
    torch_file = getattr(sys.modules.get("torch"), "__file__", None)
    return bool(torch_file) and _under(path, os.path.dirname(torch_file))


def _under(path: str, directory: str | None) -> bool:
    return bool(directory) and os.path.abspath(path).startswith(os.path.join(os.path.abspath(directory), ""))


def source_name(node: Any) -> str | None:
    """Dynamo's source of a placeholder, e.g. ``L['self']._modules['fc']._parameters['weight']``."""
    arg = node.meta.get("grapharg")
    try:
        return arg.source.name() if callable(arg.source.name) else str(arg.source.name)
    except Exception:
        return None


def qualified_name(target: Any) -> str:
    """An FX call_function target as FX's codegen names it (``torch._C._nn.linear``)."""
    try:
        from torch.fx.node import _get_qualified_name

        return _get_qualified_name(target)
    except Exception:
        return getattr(target, "__qualname__", None) or getattr(target, "__name__", None) or str(target)


def import_block(globals_: dict[str, Any]) -> str:
    """The import lines for the globals FX's codegen uses (FX's ``_format_import_block``); without it,
    ``import torch`` and one import per module-valued global."""
    try:
        import torch
        from torch.fx.graph_module import _format_import_block

        return _format_import_block(globals_, torch.package.sys_importer)
    except Exception:
        lines = {"import torch"}
        for name, obj in globals_.items():
            if type(obj) is type(sys) and name != "torch":
                lines.add(f"import {obj.__name__} as {name}")
        return "\n".join(sorted(lines))


def aoti_entry(module: Any) -> Any:
    """``torch._inductor.aoti_compile_and_package``, or None."""
    fn = getattr(module, "aoti_compile_and_package", None)
    return fn if callable(fn) else None


def aoti_loader(module: Any) -> Any:
    """``torch._inductor.aoti_load_package`` (a package's path -> a callable loaded model), or None."""
    fn = getattr(module, "aoti_load_package", None)
    return fn if callable(fn) else None


def ddp_optimizer(module: Any) -> Any:
    """``DDPOptimizer``, whose ``compile_fn(gm, example_inputs)`` gets a ``torch.compile(DDP(model))`` frame's
    whole graph with its real inputs, then hands the user's backend one graph per DDP bucket with FAKE
    inputs (no values); None where it is not a class with a ``compile_fn``."""
    cls = getattr(module, "DDPOptimizer", None)
    return cls if isinstance(cls, type) and callable(getattr(cls, "compile_fn", None)) else None


def exported_graph(ep: Any, call: tuple[tuple[Any, ...], dict[str, Any]] | None = None,
                   ) -> tuple[Any, list[Any], dict[str, str]]:
    """An ExportedProgram's graph (lifted: parameters, buffers and constants are placeholders), the values
    its placeholders take (the state dict's and constants' tensors, then the example inputs' leaves, or
    those of ``call``, the (args, kwargs) a loaded package was called with) and each parameter
    placeholder's name in the module (``p_fc_weight`` -> ``fc.weight``)."""
    from torch.utils._pytree import tree_leaves

    if call is not None:  # kwargs in the order export saw them: the order their leaves take
        args, kwargs = call
        order = list((ep.example_inputs or ((), {}))[1] or {})
        call = (tuple(args), {k: kwargs[k] for k in [*order, *(k for k in kwargs if k not in order)] if k in kwargs})
    user = iter(tree_leaves(ep.example_inputs if call is None else call))
    flat, names = [], {}
    for spec in ep.graph_signature.input_specs:
        kind = spec.kind.name
        if kind == "USER_INPUT":
            flat.append(next(user))
        elif kind in ("PARAMETER", "BUFFER", "CONSTANT_TENSOR"):
            table = ep.state_dict if spec.target in ep.state_dict else ep.constants
            flat.append(table[spec.target])
            if kind == "PARAMETER":
                names[spec.arg.name] = spec.target
        else:
            raise TypeError(f"an exported input of kind {kind} is not written")
    return ep.graph_module, flat, names


def version(t: Any) -> int | None:
    """A tensor's version counter (``Tensor._version``): it moves on every in-place change."""
    return getattr(t, "_version", None)


def int_hint(n: Any) -> int | None:
    """The int a SymInt stands for in this call, read WITHOUT a guard (``int(symint)`` would specialize
    the graph: the script recompiles where it did not without us); an int as is; None where no hint is
    known (a data-dependent size)."""
    if isinstance(n, int):
        return n
    try:
        from torch.fx.experimental.symbolic_shapes import hint_int

        return int(hint_int(n))
    except Exception:
        hint = getattr(getattr(n, "node", None), "hint", None)
        return hint if isinstance(hint, int) else None


def is_fake(t: Any) -> bool:
    """A FakeTensor (no values behind it: a DDP bucket's submodule is compiled with them)."""
    try:
        from torch._subclasses.fake_tensor import is_fake as fake

        return bool(fake(t))
    except Exception:
        return type(t).__name__ == "FakeTensor"


def settings() -> dict[str, str]:
    """Every dynamo/inductor/functorch/fx setting not at its default now, as --config takes it
    (``{"inductor.cpp.inject_relu_bug_TESTING_ONLY": "accuracy"}``): pt2kit_portable's collector, the one
    pt2kit.runtime.config.worker_settings runs, so ``inf`` survives as ``1e999`` and a setting is kept
    only where its text applies back as the same value."""
    from pt2kit_portable import collect_settings

    return collect_settings()
