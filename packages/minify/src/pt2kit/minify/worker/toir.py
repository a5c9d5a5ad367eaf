"""A captured FX graph as :mod:`.ir` data: each node as the source a standalone repro writes for it
(an aten op, a torch function, a tensor method, a higher-order op with its subgraphs as nested
functions), its value's spec from one run, and the user's line. Also the subgraphs of higher-order
ops that ran, each as a graph of its own.

Guarantees: a node with no source form is marked ``UNWRITABLE``, never written wrong; a subgraph is
written whole or not at all.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

import msgspec

from pt2kit.runtime.shims.torchapi import is_op_overload
from pt2kit.runtime.worker.hops import hop_name
from pt2kit_portable import copy_inputs, is_leaf, storage_reach, undefined_nodes, value_range

from .. import ir
from .torchapi import inplace_variant

# names a candidate's module itself uses: a graph value of that name (a user's variable, in a Dynamo
# graph) is renamed, so it cannot hide them
RESERVED = frozenset({"torch", "math", "operator", "self", "Repro"})


def _name(node: Any) -> str:
    return f"{node.name}_" if node.name in RESERVED else node.name


def _fmt(a: Any) -> str:
    import torch

    if isinstance(a, torch.fx.Node):
        return _name(a)
    if isinstance(a, list):
        return "[" + ", ".join(_fmt(x) for x in a) + "]"
    if isinstance(a, tuple):
        return "(" + ", ".join(_fmt(x) for x in a) + ("," if len(a) == 1 else "") + ")"
    if isinstance(a, dict) and all(isinstance(k, str) for k in a):
        return "{" + ", ".join(f"{k!r}: {_fmt(v)}" for k, v in a.items()) + "}"
    if isinstance(a, torch.dtype | torch.layout | torch.memory_format):
        return str(a)
    if isinstance(a, torch.device):
        return f"torch.device({str(a)!r})"
    if isinstance(a, float) and not math.isfinite(a):
        return f"float({str(a)!r})"
    if isinstance(a, bool | int | float | str | slice) or a is None or a is Ellipsis:
        return repr(a)
    if isinstance(a, complex) and math.isfinite(a.real) and math.isfinite(a.imag):
        return repr(a)
    if is_op_overload(a):  # an op handed to an op (auto_functionalized's)
        return f"torch.ops.{a}"
    if isinstance(a, torch.Tensor) and (const := by_value(_spec(a, a, str(a.device)))) is not None:
        return const  # a small tensor held inline, by value
    raise ValueError(f"an argument a standalone repro cannot write: {type(a).__name__}")


def _dotted(t: Any) -> str | None:
    """The name a repro calls ``t`` by (a torch function of a Dynamo graph: ``torch.relu``,
    ``torch.nn.functional.layer_norm``), when that name leads back to ``t`` itself; else None."""
    import importlib

    name, module = getattr(t, "__name__", None), getattr(t, "__module__", None)
    if not isinstance(name, str):
        return None
    tries = [f"torch.{name}", f"torch.nn.functional.{name}"]
    if isinstance(module, str) and module.split(".")[0] in ("torch", "math", "_operator", "operator"):
        module = {"_operator": "operator"}.get(module, module)
        tries += [f"{module}.{name}", f"{module}.{getattr(t, '__qualname__', name)}"]
    for dotted in tries:
        head, *rest = dotted.split(".")
        try:
            obj: Any = importlib.import_module(head)
            for part in rest:
                obj = getattr(obj, part)
        except (ImportError, AttributeError):
            continue
        if obj is t:
            return dotted
    return None


def _subgraph_def(name: str, gm: Any) -> list[str]:
    """A higher-order op's subgraph as a nested function a repro defines before the op's call (its
    own subgraphs nested inside it); ValueError where some node has no source form."""
    import torch

    params = [_name(n) for n in gm.graph.nodes if n.op == "placeholder"]
    lines = [f"def {name}({', '.join(params)}):"]
    for n in gm.graph.nodes:
        if n.op == "get_attr":
            sub = getattr(gm, str(n.target), None)
            if not isinstance(sub, torch.fx.GraphModule):
                raise ValueError(f"a subgraph attribute a standalone repro cannot write: {n.target}")
            lines += ["    " + ln for ln in _subgraph_def(_name(n), sub)]
        elif n.op == "output":
            lines.append(f"    return {_fmt(n.args[0])}")
        elif n.op != "placeholder":
            lines.append(f"    {_name(n)} = {_expr(n)[0]}")
    return lines


def _expr(n: Any, target: Any = None) -> tuple[str, str]:
    """(the expression, the op's name) of a call node: an aten op, a torch function or a tensor
    method (a Dynamo graph), an operator; ``target``: another op called on the node's arguments."""
    import operator

    import torch

    t = n.target if target is None else target
    args = [_fmt(a) for a in n.args] + [f"{k}={_fmt(v)}" for k, v in n.kwargs.items()]
    if n.op == "call_method":
        if not n.args or not isinstance(t, str) or not t.isidentifier():
            raise ValueError(f"a method call a standalone repro cannot write: {t}")
        return f"{_fmt(n.args[0])}.{t}({', '.join(args[1:])})", f"Tensor.{t}"
    if n.op != "call_function":
        raise ValueError(f"a node a standalone repro cannot write: {n.op}")
    if t is operator.getitem:
        return f"{_fmt(n.args[0])}[{_fmt(n.args[1])}]", "operator.getitem"
    if is_op_overload(t):
        return f"torch.ops.{t}({', '.join(args)})", str(t)
    hop = hop_name(t)
    if hop is not None and getattr(torch.ops.higher_order, hop, None) is t:
        return f"torch.ops.higher_order.{hop}({', '.join(args)})", f"higher_order.{hop}"
    dotted = _dotted(t)
    if dotted is None:
        raise ValueError(f"a call a standalone repro cannot write: {t}")
    return f"{dotted}({', '.join(args)})", dotted


# a tensor this small keeps its real values, for a failure seeded values do not show (ties, exact
# zeros, a mask's pattern); a repro embeds them as literals, so a larger one is only ever seeded
EXACT_MAX = 1024


def _values(real: Any, shape: list[int]) -> list[Any] | None:
    import torch

    if not isinstance(real, torch.Tensor) or real.is_complex() or real.numel() > EXACT_MAX \
            or list(real.shape) != shape or real.layout != torch.strided:
        return None
    flat = real.detach().cpu().reshape(-1).tolist()
    return [v if not isinstance(v, float) or math.isfinite(v) else str(v) for v in flat]


def _layout(t: Any, stride: list[int]) -> dict[str, int]:
    """The storage offset of ``t`` (the real value where it has the traced strides), and its storage's size
    in elements where larger than its layout reaches (a slice of a larger tensor): the spec's, so a
    candidate's input is laid out as the graph saw it (pt2kit_portable.make_tensor)."""
    try:
        offset = int(t.storage_offset())
        if [int(s) for s in t.stride()] != stride or t.is_nested:  # a fake value's layout, no storage
            return {"offset": offset}
        reach = storage_reach([int(n) for n in t.shape], stride, offset)
        storage = t.untyped_storage().nbytes() // max(t.element_size(), 1)
    except (RuntimeError, TypeError, NotImplementedError):  # a symbolic offset, a storage a fake tensor lacks
        return {}
    return {"offset": offset, "storage": storage if storage > reach else 0}


def _spec(val: Any, real: Any, device: str) -> ir.Spec | None:
    import torch

    from pt2kit.runtime.common.tensors import jagged

    parts = jagged(real)
    if parts is not None:  # a Dynamo graph's jagged tensor: its values' spec, its real offsets
        dense = _spec(parts.values, parts.values, device)
        if dense is None or parts.lengths is not None:  # holes between its components: not rebuilt
            return None
        return msgspec.structs.replace(dense, kind="jagged", offsets=[int(o) for o in parts.offsets.tolist()],
                                       ragged_dim=parts.ragged_dim)
    if isinstance(val, torch.Tensor) and val.is_nested:  # one whose real value is not known
        return None
    if isinstance(val, torch.Tensor):
        lo = hi = None
        if isinstance(real, torch.Tensor) and not real.is_complex() and real.dtype != torch.bool and real.numel():
            # the range the real values took (capture's rule): an index stays in bounds, a log's input positive
            got = value_range(real)
            if got is not None:
                lo, hi = float(got[0]), float(got[1])
        try:
            shape, stride = [int(d) for d in val.shape], [int(s) for s in val.stride()]
        except RuntimeError:  # a size no hint holds (a while_loop's stacked output, unbacked): the real run's
            if not isinstance(real, torch.Tensor):
                return None
            shape, stride = list(real.shape), list(real.stride())
        return ir.Spec("tensor", shape, stride, str(val.dtype).removeprefix("torch."), device, lo, hi,
                       values=_values(real, shape), **_layout(real if isinstance(real, torch.Tensor) else val, stride))
    if isinstance(real, bool | int | float) and (not isinstance(real, float) or math.isfinite(real)):
        return ir.Spec("scalar", value=real)
    return None


def _shared_storages(placeholders: list[Any], args: list[Any]) -> dict[str, str]:
    """{an input's name: its group's first input's name} for the graph inputs of one dtype that share one
    storage in the real call (``f(a, a[1])``): a candidate feeds them as views of one storage again."""
    import torch

    groups: dict[tuple[str, int, Any], list[str]] = {}
    for n, a in zip(placeholders, args, strict=False):
        if isinstance(a, torch.Tensor) and a.layout == torch.strided and not a.is_nested and a.numel():
            groups.setdefault((str(a.device), a.untyped_storage().data_ptr(), a.dtype), []).append(_name(n))
    return {m: names[0] for names in groups.values() if len(names) > 1 for m in names}


def _held(gm: Any, n: Any) -> bool:
    """Whether a get_attr node reads a constant the graph holds (AOTAutograd's ``_tensor_constant0``), not a
    parameter or a tensor that requires grad (a Dynamo graph's module state, where it does not inline the
    module): that is a value a training step differentiates, fed in."""
    obj: Any = gm
    for part in str(n.target).split("."):
        obj = getattr(obj, part, None)
    return getattr(obj, "requires_grad", True) is False


def by_value(spec: ir.Spec | None) -> str | None:
    """A constant the graph holds (``_tensor_constant0``: the index list of ``x[[0, 0]]``, a
    ``torch.tensor`` of the script), written by value: ``torch.tensor([0, 0])``, made in the candidate's
    forward, where Dynamo and AOTAutograd make it a constant of the graph again, as the compiler saw it (fed
    in as an input, a compiler's constant folding or its pass on constants would not see it). None where it
    has no real values kept (more than EXACT_MAX elements, complex): it is fed in as an input."""
    if spec is None or spec.kind != "tensor" or spec.values is None:
        return None
    items = [f"float({v!r})" if isinstance(v, str) else repr(v) for v in spec.values]
    where = "" if spec.device == "cpu" else f", device={spec.device!r}"
    if not items:
        return f"torch.zeros({spec.shape!r}, dtype=torch.{spec.dtype}{where})"
    for d in reversed(spec.shape[1:]):  # row-major items, grouped into nested lists from the last dimension
        items = ["[" + ", ".join(items[i:i + d]) + "]" for i in range(0, len(items), d)]
    text = items[0] if not spec.shape else "[" + ", ".join(items) + "]"
    return f"torch.tensor({text}, dtype=torch.{spec.dtype}{where})"


def _grad(n: Any, level: str) -> bool:
    """Whether a Dynamo graph's value required grad where Dynamo traced it, in the real run (its
    ``example_value`` is made from the real input, and carries requires_grad from it): what a joint
    candidate marks. An aten graph's is never run as a training step: False."""
    return level == "dynamo" and bool(getattr(n.meta.get("example_value"), "requires_grad", False))


def _leaf(n: Any, level: str) -> bool:
    """Whether a Dynamo graph's input was a leaf where Dynamo traced it (its ``example_value`` mirrors the
    real input's autograd state): one that was not (``x + 1`` of an ``x`` that requires grad, handed to the
    compiled function) is rebuilt as none. An aten graph's inputs carry no autograd history: leaves."""
    val = n.meta.get("example_value")
    return level != "dynamo" or not hasattr(val, "requires_grad") or is_leaf(val)


def to_ir(gm: Any, args: list[Any], index: int, device: str, level: str = "aten",
          subgraph: str | None = None, phase: str = "forward") -> ir.Graph:
    """The graph as :mod:`.ir` data, each value's spec taken from one run of it on ``args`` (its
    first call's real arguments). ``level``: "aten" (AOTAutograd's forward graph, or with ``phase``
    "backward" its backward graph) or "dynamo" (the graph Dynamo hands a backend: torch functions and
    tensor methods)."""
    import torch

    from pt2kit.runtime.worker.fxmeta import node_place

    specs: dict[str, ir.Spec | None] = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n: Any) -> Any:
            out = super().run_node(n)
            # taken as it is made: a later node may write into it (the copy_ into an input that ends a graph
            # keeping its input mutations), and a candidate is fed the value its first reader read
            val = n.meta.get("val", n.meta.get("example_value"))
            specs[n.name] = _spec(val if val is not None else out, out, device)
            return out

    with torch.no_grad():
        try:
            Recorder(gm).run(*copy_inputs(list(args)))  # copies, storages shared as they were: the writes stay in them
        except Exception:  # it raises where it runs (eager's own error, a signal compiled): past it, the fake values' specs
            pass
    out_node = next(n for n in gm.graph.nodes if n.op == "output")
    outputs = {a.name for a in out_node.all_input_nodes}
    shared = _shared_storages([n for n in gm.graph.nodes if n.op == "placeholder"], args)
    undefined = undefined_nodes(gm.graph)
    folded = _writes(gm) if level == "aten" else {}
    nodes, dynamic = [], False
    for n in gm.graph.nodes:
        if n in folded.values():
            continue  # written as its copy_'s in-place op, below
        val = n.meta.get("val", n.meta.get("example_value"))
        if isinstance(val, torch.SymInt) or (isinstance(val, torch.Tensor)
                                            and any(isinstance(d, torch.SymInt) for d in val.shape)):
            dynamic = True
        spec = specs[n.name] if n.name in specs else _spec(val, None, device)
        sub = getattr(gm, str(n.target), None) if n.op == "get_attr" else None
        if isinstance(sub, torch.fx.GraphModule):  # a higher-order op's subgraph: a nested function
            try:
                body = _subgraph_def(_name(n), sub)
            except ValueError:
                body = []
            nodes.append(ir.Node(name=_name(n), expr=ir.UNWRITABLE if not body else ir.DEFINED, op="subgraph",
                                 body=body))
        elif n.op in ("placeholder", "get_attr"):  # a constant attribute too large to write is fed in like an input
            if spec is not None and n.op == "placeholder" and not _leaf(n, level):
                spec = msgspec.structs.replace(spec, leaf=False)
            if spec is not None and _name(n) in shared:
                spec = msgspec.structs.replace(spec, shares=shared[_name(n)])
            nodes.append(ir.Node(name=_name(n), op="input", spec=spec, grad=_grad(n, level),
                                 const=by_value(spec) if n.op == "get_attr" and _held(gm, n) else None))
        elif n.op != "output":
            src = folded.get(n, n)  # the copy_ of a write into an input: the in-place op of what it copies
            try:
                expr, op = _expr(src, inplace_variant(src.target) if src is not n else None)
            except ValueError:
                expr, op = ir.UNWRITABLE, str(n.target)
            place, code, _ = node_place(src)
            nodes.append(ir.Node(name=_name(n), expr=expr, deps=[_name(d) for d in src.all_input_nodes],
                                 op=op, spec=spec, place=place, code=code, output=n.name in outputs,
                                 grad=_grad(n, level), undefined=n.name in undefined))
    return ir.Graph(index=index, nodes=nodes, dynamic=dynamic, level=level, subgraph=subgraph, phase=phase)


def _writes(gm: Any) -> dict[Any, Any]:
    """{the copy_ into an input: the op whose value it copies}, where that op reads the input first, has an
    in-place form with its arguments (``index_put`` -> ``index_put_``), nothing else reads its value, and its
    value is the input's shape and dtype. AOTAutograd writes the user's one in-place op (``x[i] += v``) as the
    pair; a repro writes it as the one op, which AOTAutograd functionalizes back into the same pair, so the
    graph the backend is handed is the same with one op fewer to read (and to keep: neither goes alone)."""
    import torch

    out = {}
    for n in gm.graph.nodes:
        if n.op != "call_function" or n.target is not torch.ops.aten.copy_.default or len(n.args) != 2 or n.kwargs:
            continue
        dst, src = n.args
        if not isinstance(src, torch.fx.Node) or src.op != "call_function" or len(src.users) != 1 \
                or getattr(dst, "op", None) != "placeholder" or not src.args or src.args[0] is not dst:
            continue
        a, b = src.meta.get("val"), dst.meta.get("val")
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape \
                and a.dtype == b.dtype and inplace_variant(src.target) is not None:
            out[n] = src
    return out


def inside(gm: Any, args: list[Any], index: int, device: str) -> list[ir.Graph]:
    """The subgraphs of ``gm``'s higher-order ops that ran (a cond's taken branch, a loop body on its
    first iteration's values), each as a graph of its own: a bug inside one is cut to a repro without
    the op around it where it shows so (else the search goes on to the whole graph, the op kept whole)."""
    from pt2kit.runtime.worker.descend import entered
    from pt2kit.runtime.worker.hops import hop_name, is_hop, materialise

    out = []
    for n in gm.graph.nodes:
        if n.op == "call_function" and is_hop(n.target):
            with contextlib.suppress(Exception):  # a subgraph that will not run on its own is not searched
                for attr, sub, sub_args in entered(gm, copy_inputs(list(args)), n):  # a write stays in the copies
                    out.append(to_ir(materialise(sub), sub_args, index, device,
                                     subgraph=f"{hop_name(n.target)} → {attr}"))
    return out
