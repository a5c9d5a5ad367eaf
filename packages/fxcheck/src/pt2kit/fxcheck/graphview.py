"""A torch-free description of one captured graph: what every constraint reads.

Building it is the only place that looks at FX nodes and fake tensors; constraints then work on
plain data, so each can be tested on a hand-made view as well as on a real compile.
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass, field
from typing import Any

import torch

from pt2kit.runtime.fxmeta import module_path, user_frame

from . import torchapi


@dataclass
class TensorInfo:
    dtype: str
    shape: list[int | str]
    hints: list[int | None]  # for a symbolic size, the example value behind it (if known)
    stride: list[int | str] | None = None
    strided: bool = True
    contiguous: bool = True
    contiguous_transposed: bool = False  # contiguous once the last two dims are swapped
    nbytes: int | None = None  # None when a size is symbolic
    floating: bool = True


@dataclass
class NodeInfo:
    name: str
    kind: str  # placeholder | call_function | get_attr | output
    op: str | None = None  # aten.addmm.default, or a function's qualified name in a Dynamo graph
    packet: str | None = None  # aten.addmm
    aten: bool = False  # target is an aten OpOverload
    view: bool = False
    mutable: bool = False
    composite_implicit: bool = False
    outputs: list[TensorInfo] = field(default_factory=list)
    inputs: list[tuple[str, TensorInfo]] = field(default_factory=list)
    source: str | None = None
    code: str | None = None
    module: str | None = None
    label: str | None = None  # for a placeholder: the Dynamo input it stands for
    param: bool = False  # a parameter, buffer or constant of the model, not an activation

    @property
    def compute(self) -> bool:
        """An aten op that does work: not a view, not a tuple element."""
        return self.aten and not self.view


@dataclass
class GraphView:
    phase: str
    index: int
    nodes: list[NodeInfo]
    pre_functional: bool = False


def _dim(x: Any) -> int | str:
    value = torchapi.static_int(x)
    return value if value is not None else str(x)


def tensor_info(t: Any) -> TensorInfo | None:
    if not isinstance(t, torch.Tensor):
        return None
    shape = [_dim(s) for s in t.shape]
    hints = [s if isinstance(s, int) else torchapi.sym_hint(raw) for s, raw in zip(shape, t.shape, strict=True)]
    info = TensorInfo(
        dtype=str(t.dtype).removeprefix("torch."),
        shape=shape,
        hints=hints,
        floating=t.dtype.is_floating_point or t.dtype.is_complex,
    )
    if t.layout != torch.strided:
        info.strided = False
        return info
    try:
        info.stride = [_dim(s) for s in t.stride()]
        info.contiguous = bool(t.is_contiguous())
        if t.dim() >= 2 and not info.contiguous:
            info.contiguous_transposed = bool(t.transpose(-1, -2).is_contiguous())
    except Exception:  # a symbolic stride that cannot be decided: say nothing rather than guess
        info.contiguous = True
    if all(isinstance(s, int) for s in shape):
        numel = 1
        for s in shape:
            numel *= s
        info.nbytes = numel * t.element_size()
    return info


def _outputs(val: Any) -> list[TensorInfo]:
    vals = val if isinstance(val, tuple | list) else [val]
    return [i for i in (tensor_info(v) for v in vals) if i is not None]


def _op_name(target: Any) -> tuple[str | None, str | None, bool]:
    if isinstance(target, torch._ops.OpOverload):
        return str(target), str(target.overloadpacket), True
    if isinstance(target, torch._ops.HigherOrderOperator):
        return f"higher_order.{target.__name__}", None, False
    if target is operator.getitem:
        return "getitem", None, False
    return torchapi.qualified_name(target), None, False


_PARAM = re.compile(r"_(?:parameters|buffers)_")


def input_label(dynamo_name: str) -> str:
    """``l_self_modules_fc1_parameters_weight_`` -> ``self.fc1.weight``; ``l_x_`` -> ``x``."""
    name = re.sub(r"^l_|_$", "", dynamo_name)
    return re.sub(r"_(?:modules|parameters|buffers)_", ".", name)


def build(gm: torch.fx.GraphModule, phase: str, index: int, *, pre_functional: bool = False,
          fallback_modules: dict[Any, str] | None = None, inputs: list[str] | None = None) -> GraphView:
    """Describe ``gm``.

    ``fallback_modules`` maps ``seq_nr`` to a module path for backward nodes; ``inputs`` are the
    Dynamo graph's placeholder names, to say which input an AOT placeholder is.
    """
    nodes: list[NodeInfo] = []
    by_name: dict[str, NodeInfo] = {}
    for n in gm.graph.nodes:
        if n.op not in ("placeholder", "call_function", "get_attr"):
            continue
        val = n.meta.get("val", n.meta.get("example_value"))
        info = NodeInfo(name=n.name, kind=n.op, outputs=_outputs(val))
        if n.op == "get_attr":
            info.param = True
        if n.op == "placeholder":
            idx, token = torchapi.aot_input(n)
            if token:
                continue
            if phase == "dynamo":
                info.label = input_label(n.name)
                info.param = bool(_PARAM.search(n.name))
            elif inputs is not None and idx is not None and idx < len(inputs):
                info.label = f"{input_label(inputs[idx])} ({n.name})"
                info.param = bool(_PARAM.search(inputs[idx]))
        if n.op == "call_function":
            info.op, info.packet, info.aten = _op_name(n.target)
            if info.aten:
                info.view = torchapi.is_view(n.target)
                info.mutable = torchapi.is_mutable(n.target)
            else:
                fname = getattr(n.target, "__name__", None)
                if fname and hasattr(torch.ops.aten, fname):
                    info.composite_implicit = torchapi.is_composite_implicit(f"aten::{fname}")
            for a in n.all_input_nodes:
                src = by_name.get(a.name)
                if src is not None and src.outputs and not (src.op == "getitem"):
                    info.inputs.append((a.name, src.outputs[0]))
                elif src is not None and src.op == "getitem":
                    info.inputs.extend((a.name, o) for o in src.outputs[:1])
            info.source, info.code = user_frame(n.meta.get("stack_trace"))
            info.module = module_path(n.meta.get("nn_module_stack"))
            if info.module is None and fallback_modules:
                info.module = fallback_modules.get(n.meta.get("seq_nr"))
        nodes.append(info)
        by_name[n.name] = info
    return GraphView(phase=phase, index=index, nodes=nodes, pre_functional=pre_functional)


def seq_nr_modules(gm: torch.fx.GraphModule) -> dict[Any, str]:
    """``seq_nr`` -> module path, from a joint graph's forward nodes (backward nodes share seq_nr)."""
    out: dict[Any, str] = {}
    for n in gm.graph.nodes:
        path = module_path(n.meta.get("nn_module_stack"))
        if path and "seq_nr" in n.meta:
            out.setdefault(n.meta["seq_nr"], path)
    return out


def op_counts(gm: torch.fx.GraphModule) -> dict[str, int]:
    counts: dict[str, int] = {}
    for n in gm.graph.nodes:
        if n.op == "call_function":
            name = _op_name(n.target)[0] or str(n.target)
            counts[name] = counts.get(name, 0) + 1
        elif n.op == "call_module":
            counts[f"module:{n.target}"] = counts.get(f"module:{n.target}", 0) + 1
    return counts
