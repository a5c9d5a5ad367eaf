"""A torch-free description of one captured graph: what every constraint reads.

Building it is the only place that looks at FX nodes and fake tensors; constraints then work on
plain data, so each can be tested on a hand-made view as well as on a real compile.

Guarantees: a view holds every node of the graph *and of its subgraphs*: the branches, loop bodies,
score and mask mods, checkpointed regions a higher-order op (``cond``, ``while_loop``, ``scan``,
``flex_attention``, ``invoke_subgraph``, ``wrap``...) reaches through a ``get_attr`` submodule, at
any depth, each node tagged with its ``subgraph`` path (``cond → false_graph_0``). So every
constraint sees them without knowing they exist. A subgraph's placeholders are the operands its op
was given (described where they were made), so they are not nodes of their own.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from pt2kit.runtime.worker.fxmeta import module_path, user_frame
from pt2kit.runtime.worker.hops import hop_name

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
    subgraph: str | None = None  # where it lives below the graph: "cond → false_graph_0"; None at the top

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
    if torchapi.is_op_overload(target):
        return str(target), str(target.overloadpacket), True
    if torchapi.is_higher_order(target):
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
    """Describe ``gm`` and every subgraph below it.

    ``fallback_modules`` maps ``seq_nr`` to a module path for backward nodes; ``inputs`` are the
    Dynamo graph's placeholder names, to say which input an AOT placeholder is.
    """
    nodes: list[NodeInfo] = []
    for path, g in graphs(gm):
        nodes.extend(_describe(g, phase, path, fallback_modules, inputs if path is None else None))
    return GraphView(phase=phase, index=index, nodes=nodes, pre_functional=pre_functional)


def graphs(gm: torch.fx.GraphModule) -> Iterator[tuple[str | None, torch.fx.GraphModule]]:
    """``gm`` (path None), then each subgraph a higher-order op of it takes, depth first, with its path.

    A subgraph is a GraphModule attribute a ``get_attr`` node reads; its path names the op that
    uses it (``while_loop → while_loop_body_graph_0``), or the attribute alone if no op does. One
    called twice (``invoke_subgraph`` of a repeated layer) is walked once.
    """
    seen: set[int] = set()

    def walk(g: torch.fx.GraphModule, path: str | None) -> Iterator[tuple[str | None, torch.fx.GraphModule]]:
        yield path, g
        for n in g.graph.nodes:
            sub = _attr(g, n.target) if n.op == "get_attr" else None
            if not isinstance(sub, torch.fx.GraphModule) or id(sub) in seen:
                continue
            seen.add(id(sub))
            hop = next((u for u in n.users if u.op == "call_function"), None)
            here = f"{hop_name(hop.target) or hop.target} → {n.target}" if hop is not None else str(n.target)
            yield from walk(sub, f"{path} → {here}" if path else here)

    return walk(gm, None)


def _attr(gm: torch.fx.GraphModule, target: str) -> Any:
    obj: Any = gm
    for part in str(target).split("."):
        obj = getattr(obj, part, None)
    return obj


def _describe(gm: torch.fx.GraphModule, phase: str, path: str | None, fallback_modules: dict[Any, str] | None,
              inputs: list[str] | None) -> list[NodeInfo]:
    nodes: list[NodeInfo] = []
    by_name: dict[str, NodeInfo] = {}
    for n in gm.graph.nodes:
        if n.op not in ("placeholder", "call_function", "get_attr"):
            continue
        val = n.meta.get("val", n.meta.get("example_value"))
        info = NodeInfo(name=n.name, kind=n.op, outputs=_outputs(val), subgraph=path)
        if n.op == "get_attr":
            if isinstance(_attr(gm, n.target), torch.fx.GraphModule):
                continue  # a subgraph: its nodes are described on their own
            info.param = True
        if n.op == "placeholder":
            if path is not None:  # an operand of the op, described where it was made
                by_name[n.name] = info
                continue
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
    return nodes


def seq_nr_modules(gm: torch.fx.GraphModule) -> dict[Any, str]:
    """``seq_nr`` -> module path, from a joint graph's forward nodes (backward nodes share seq_nr)."""
    out: dict[Any, str] = {}
    for n in (n for _, g in graphs(gm) for n in g.graph.nodes):
        path = module_path(n.meta.get("nn_module_stack"))
        if path and "seq_nr" in n.meta:
            out.setdefault(n.meta["seq_nr"], path)
    return out


def op_counts(gm: torch.fx.GraphModule) -> dict[str, int]:
    """Each op's count in the graph and its subgraphs (a branch's tanh is the graph's too)."""
    counts: dict[str, int] = {}
    for n in (n for _, g in graphs(gm) for n in g.graph.nodes):
        if n.op == "call_function":
            name = _op_name(n.target)[0] or str(n.target)
            counts[name] = counts.get(name, 0) + 1
        elif n.op == "call_module":
            counts[f"module:{n.target}"] = counts.get(f"module:{n.target}", 0) + 1
    return counts
