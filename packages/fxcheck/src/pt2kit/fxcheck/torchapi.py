"""Every private torch API fxcheck uses, each behind one small function (tests/test_torchapi.py).

Private APIs move between releases; when one does, this is the only file to change. Checked on
torch 2.13 (CPU, CI) and 2.11 (CUDA, the GPU machine).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch


def boxed(fn: Callable[..., Any]) -> Callable[..., Any]:
    """AOTAutograd calls compiled graphs with one boxed list of arguments."""
    from functorch.compile import make_boxed_func

    return make_boxed_func(fn)


def aot_capture(
    gm: torch.fx.GraphModule,
    example_inputs: list[Any],
    fw_compiler: Callable[[torch.fx.GraphModule, list[Any]], Any],
    on_backward: Callable[[torch.fx.GraphModule, torch.fx.GraphModule], None],
) -> Callable[..., Any]:
    """AOTAutograd without decompositions (the aten ops as the model uses them).

    ``on_backward(joint, bw)`` gets the backward graph when the partitioner makes it, at forward
    compile time, so it is captured even if backward never runs.
    """
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.partitioners import default_partition

    def partition(joint: torch.fx.GraphModule, joint_inputs: Any, **kw: Any) -> Any:
        fw, bw = default_partition(joint, joint_inputs, **kw)
        on_backward(joint, bw)
        return fw, bw

    def bw_compiler(g: torch.fx.GraphModule, ex: list[Any]) -> Any:
        return boxed(g.forward)

    return aot_autograd(fw_compiler=fw_compiler, bw_compiler=bw_compiler, partition_fn=partition)(gm, example_inputs)


def pre_functional_graph(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> torch.fx.GraphModule:
    """The aten graph before functionalization, so in-place ops (``aten.relu_``) are still there.

    Traced with fake tensors of its own, keeping each Dynamo node's stack trace and module stack.
    Outside Dynamo's tracing context: make_fx would otherwise take Dynamo's fake mode and add
    symbols without sources to its shape env, and Dynamo's guard building then fails.
    """
    import torch.fx.traceback as fx_traceback
    from torch._guards import tracing
    from torch.fx.experimental.proxy_tensor import make_fx

    with tracing(None), fx_traceback.preserve_node_meta():
        return make_fx(torch.fx.Interpreter(gm).run, tracing_mode="fake", record_stack_traces=True)(*example_inputs)


@contextlib.contextmanager
def output_code() -> Iterator[list[str]]:
    """Collect the wrapper code Inductor generates inside the block (the caches that would skip generating it off)."""
    from unittest import mock

    from torch._inductor.graph import GraphLowering

    from pt2kit.runtime.shims.torchapi import generating

    codes: list[str] = []
    with (
        mock.patch.object(GraphLowering, "save_output_code", staticmethod(codes.append)),
        generating(),
    ):
        yield codes


def inductor_compile(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
    from torch._inductor.compile_fx import compile_fx

    return compile_fx(gm, example_inputs)


def is_composite_implicit(qualified: str) -> bool:
    """Whether an aten op (``aten::linalg_lu_factor``) decomposes before AOTAutograd sees it."""
    try:
        return bool(torch._C._dispatch_has_kernel_for_dispatch_key(qualified, "CompositeImplicitAutograd"))
    except RuntimeError:
        return False


def is_view(op: Any) -> bool:
    """The op returns an alias of an input (free: no memory, no compute)."""
    schema = getattr(op, "_schema", None)
    if schema is None:
        return False
    return any(r.alias_info is not None and not r.alias_info.is_write for r in schema.returns)


def is_mutable(op: Any) -> bool:
    """The op writes one of its inputs (in place): functionalization removes it."""
    schema = getattr(op, "_schema", None)
    return bool(schema is not None and schema.is_mutable)


def static_int(x: Any) -> int | None:
    """A size as an int when it is one (or a SymInt fixed to a constant); None when symbolic.

    Never ``int(symint)``: that would specialise the size and add a guard.
    """
    if isinstance(x, int):
        return x
    if isinstance(x, torch.SymInt):
        as_int = getattr(x.node, "maybe_as_int", None)
        value = as_int() if as_int is not None else None
        return int(value) if value is not None else None
    try:
        return int(x)
    except (TypeError, ValueError, RuntimeError):
        return None


def sym_hint(x: Any) -> int | None:
    """The example value behind a symbolic size, when Dynamo recorded one."""
    node = getattr(x, "node", None)
    hint = getattr(node, "hint", None)
    try:
        return int(hint) if hint is not None else None
    except (TypeError, ValueError, AttributeError):  # a nested int (a jagged size) has no value
        return None


def aot_input(node: Any) -> tuple[int | None, bool]:
    """(index of the Dynamo graph input an AOT placeholder stands for, whether it is an effect token).

    Read from the AOT input descriptor (``node.meta["desc"]``, torch >= 2.9); (None, False) without one.
    """
    desc = node.meta.get("desc")
    if desc is None:
        return None, False
    if "Token" in type(desc).__name__:
        return None, True
    idx = getattr(desc, "idx", None)
    return (idx if isinstance(idx, int) else None), False


def is_op_overload(target: Any) -> bool:
    """An aten (or other library) op overload, ``aten.addmm.default``: what AOT graphs call."""
    return isinstance(target, torch._ops.OpOverload)


def is_higher_order(target: Any) -> bool:
    """A higher-order operator (``cond``, ``while_loop``, ``flex_attention``...): it takes subgraphs."""
    return isinstance(target, torch._ops.HigherOrderOperator)


def qualified_name(target: Any) -> str:
    """``torch._C._nn.linear``, ``torch.relu``: how FX itself names a function target."""
    from torch.fx.node import _get_qualified_name

    try:
        return _get_qualified_name(target)
    except Exception:
        return getattr(target, "__name__", None) or str(target)
