"""Every private torch API the capture boot uses, each behind one small function.

Runs inside the user's interpreter: stdlib + torch only. Each function is tolerant of its API being
absent or changed (torch 2.13 here, 2.11 on the GPU machine): it returns a fallback (None, {}, the
plain value) instead of raising, because capture must never break the user's program.

Guarantees: importing this module imports nothing but the stdlib (and ``pt2kit_capture_userfile``); torch
is imported by the functions that need it, when called. Not guaranteed: the field a function fills on a
torch whose private API moved: its fallback leaves the field empty (None, {}), never guessed.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any

from pt2kit_capture_userfile import is_torch_file, module_of, user_file

AFTER_DYNAMO = "torch._dynamo.repro.after_dynamo"  # defines wrap_backend_debug, imported at call time
AOTI_MODULE = "torch._inductor"  # defines aoti_compile_and_package
EXPORT_MODULE = "torch.export"  # defines export, the script's torch.export.export
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


def inductor_cache_dir() -> str | None:
    """The folder Inductor caches in for this process (``torch._inductor.runtime.cache_dir_utils.cache_dir``:
    ``TORCHINDUCTOR_CACHE_DIR``, else its default under the temporary folder), absolute; None where this
    torch has no such function."""
    try:
        from torch._inductor.runtime.cache_dir_utils import cache_dir

        return os.path.abspath(cache_dir())
    except Exception:
        return None


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
        in_torch = in_torch or is_torch_file(frame.f_code.co_filename)
        frame = frame.f_back
    return None


_STACK_LINE = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


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


def flex_attention_hop() -> Any:
    """``torch.ops.higher_order.flex_attention`` (the op Dynamo writes for a flex_attention call), or None."""
    try:
        import torch

        return torch.ops.higher_order.flex_attention
    except Exception:
        return None


def jagged_parts(t: Any) -> tuple[Any, Any, Any, int] | None:
    """(values, offsets, lengths or None, ragged dim) of a ``torch.nested`` jagged tensor; None for anything
    else. ``_ragged_idx`` is private (torch 2.4 to 2.13 keep it); without it, the dim whose size is no int."""
    import torch

    if not isinstance(t, torch.Tensor) or not t.is_nested or t.layout != torch.jagged:
        return None
    idx = getattr(t, "_ragged_idx", None)
    if not isinstance(idx, int):
        idx = next(i for i, s in enumerate(t.shape) if not isinstance(s, int))
    return t.values(), t.offsets(), t.lengths(), idx


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
    pt2kit.runtime.common.config.worker_settings runs, so ``inf`` survives as ``1e999`` and a setting is kept
    only where its text applies back as the same value; and what a compile's ``fullgraph=True`` gave it."""
    from pt2kit_portable import collect_settings

    return {**collect_settings(), **_one_graph_settings()}


# fullgraph=True lets Dynamo's fake mode trace data-dependent ops as these do (output_graph.py): a model file
# compiled without them traces a while_loop's backward into an error, and Dynamo runs the graph eagerly
_ONE_GRAPH = {"allow_scalar_outputs": "capture_scalar_outputs",
              "allow_dynamic_output_shape_ops": "capture_dynamic_output_shape_ops"}


def _one_graph_settings() -> dict[str, str]:
    """The dynamo settings that give a compile's fake mode what it allows now beyond dynamo's config."""
    try:
        from torch._dynamo import config
        from torch._guards import TracingContext

        env = TracingContext.try_get().fake_mode.shape_env
        return {f"dynamo.{k}": "True" for a, k in _ONE_GRAPH.items() if getattr(env, a) and not getattr(config, k)}
    except Exception:  # no compile under way, or no shape env: nothing beyond the config
        return {}


# op namespaces that a bare `import torch` leaves empty or partly filled, and the torch module that fills
# them; an op of another namespace is found by where it was registered (torch._C._dispatch_dump)
_OP_MODULES = {"prims": "torch._prims", "quantized_decomposed": "torch.ao.quantization.fx._decomposed",
               "higher_order": "torch._higher_order_ops"}
_INDUCTOR_PRIMS = "torch._inductor.inductor_prims"  # prims.fma, prims.seed, ...: not torch._prims's
_REGISTERED = re.compile(r"^debug: registered at (.+?):(\d+)\s*$", re.M)


def op_imports(gm: Any) -> tuple[list[str], list[str]]:
    """(import lines, notes) a model file of gm needs for the ops it calls: ``torch.ops.prims.fma`` exists
    only once ``torch._inductor.inductor_prims`` is imported, ``prims.add`` once ``torch._prims`` is, a
    higher-order op once its module is. An op registered outside torch (``torch.library`` in the script or
    in a module no model file may import) gets a note naming where, never an import of the user's code."""
    imports: set[str] = set()
    notes: list[str] = []
    for target in _op_targets(gm):
        try:
            module, note = _op_module(target)
        except Exception:
            continue
        if module:
            imports.add(f"import {module}")
        if note and note not in notes:
            notes.append(note)
    return sorted(imports), notes


def _op_targets(gm: Any) -> list[Any]:
    import torch

    seen: dict[int, Any] = {}
    for mod in gm.modules():
        for node in getattr(getattr(mod, "graph", None), "nodes", ()):
            t = node.target
            if node.op == "call_function" and isinstance(t, torch._ops.OperatorBase | torch._ops.OpOverloadPacket):
                seen.setdefault(id(t), t)
    return list(seen.values())


def _op_module(target: Any) -> tuple[str | None, str | None]:
    """(module to import, note) for one op target."""
    import torch

    if isinstance(target, torch._ops.HigherOrderOperator):
        module = type(target).__module__
        return (module if module.startswith("torch.") and module != "torch._ops" else _OP_MODULES["higher_order"]), None
    packet = getattr(target, "overloadpacket", target)
    ns, name = getattr(packet, "_qualified_op_name", "::").split("::", 1)
    if ns == "aten":
        return None, None
    if ns == "prims":
        inductor = sys.modules.get(_INDUCTOR_PRIMS)
        if inductor is not None and any(getattr(v, "overloadpacket", v) is packet for v in vars(inductor).values()):
            return _INDUCTOR_PRIMS, None
        return _OP_MODULES["prims"], None
    if ns in _OP_MODULES:
        return _OP_MODULES[ns], None
    where = registered_at(f"{ns}::{name}")
    if where is None or where[0].endswith(".cpp") or where[0].startswith("/dev/null"):
        return None, None  # C++: there once torch (or the library that loaded it) is imported
    module = module_of(where[0])
    if module and module.startswith("torch.") and not module.startswith(("torch._library", "torch.library")):
        return module, None
    return None, (f"op {ns}::{name} is registered by {where[0]}:{where[1]}, which this file does not import: it "
                  "runs only where that registration is done first")


def registered_at(qualname: str) -> tuple[str, int] | None:
    """(file, line) where an op's schema was registered (``torch._C._dispatch_dump``'s ``debug:`` line)."""
    try:
        import torch

        m = _REGISTERED.search(torch._C._dispatch_dump(qualname))
    except Exception:
        return None
    if m and "_library" in m.group(1):  # torch.library.custom_op's own line: the decorated function's instead
        fn = getattr(_custom_op_defs().get(qualname), "_init_fn", None)
        code = getattr(fn, "__code__", None)
        if code is not None:
            return code.co_filename, code.co_firstlineno
    return (m.group(1), int(m.group(2))) if m else None


def _custom_op_defs() -> dict[str, Any]:
    """``torch._library.custom_ops.OPDEFS``: qualname -> the ``torch.library.custom_op`` that defined it."""
    try:
        from torch._library.custom_ops import OPDEFS

        return dict(OPDEFS)
    except Exception:
        return {}


def output_meta(gm: Any) -> list[dict[str, Any] | None] | None:
    """Each leaf of the graph's output as Dynamo's example value says it ({"dtype", "shape"}; None for a
    leaf that is no tensor), in pytree order; None where the output node holds no example values. A
    symbolic size is None in its shape: its example is the first call's, and a later call's (whose inputs
    a ``@stepN`` model file holds) may differ where the graph is dynamic."""
    try:
        import torch
        from torch.utils._pytree import tree_leaves

        out = next(n for n in reversed(list(gm.graph.nodes)) if n.op == "output")
        leaves = tree_leaves(out.args[0], is_leaf=lambda x: isinstance(x, torch.fx.Node))
        metas = []
        for leaf in leaves:
            val = (leaf.meta.get("val", leaf.meta.get("example_value")) if isinstance(leaf, torch.fx.Node) else leaf)
            if isinstance(leaf, torch.fx.Node) and val is None and "val" not in leaf.meta and "example_value" not in leaf.meta:
                return None
            metas.append({"dtype": str(val.dtype), "shape": [d if isinstance(d, int) else None for d in val.shape]}
                         if isinstance(val, torch.Tensor) else None)
        return metas
    except Exception:
        return None

