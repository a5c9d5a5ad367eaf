"""A captured graph as plain data, and a candidate (a subset of its nodes) as Python source. Torch-free:
the parent searches over these while the workers compile.

Each node keeps the expression FX would write for it, naming its inputs by node name, so a candidate
is the kept nodes' lines in graph order: an input a kept node reads from a dropped node becomes a
parameter of the same name, fed a seeded random value of the shape, stride and dtype that node had.
Only nodes whose value is a tensor or a scalar can become inputs (a tuple cannot); a candidate that
would need one is not built.
"""

from __future__ import annotations

import hashlib
import re

import msgspec

from pt2kit_portable import escape, storage_reach

TENSORS = ("tensor", "jagged")  # the spec kinds of a tensor value (a candidate's output, a localised node)
NON_LEAF = "non-leaf"  # a spec's last item where its input was no leaf (harness.make_inputs reads it)
Config = dict[str, dict[str, str]]  # {config module: {key: the value's Python literal text}}


class Spec(msgspec.Struct, frozen=True, array_like=True):
    """("tensor", shape, stride, dtype, device, lo, hi[, values[, "non-leaf"]]), ("scalar", value) or ("jagged", ...):
    harness.make_inputs's spec. ``values``: a small tensor's real values, row-major ("nan", "inf", "-inf"
    as text), fed in only where the failure needs them (a candidate's spec carries them only then). A
    torch.nested jagged tensor (a Dynamo graph's input) is its ``values()``'s spec with its real
    ``offsets`` and ``ragged_dim``: the repro rebuilds it with nested_tensor_from_jagged."""

    kind: str
    shape: list[int] = []
    stride: list[int] = []
    dtype: str = ""
    device: str = "cpu"
    lo: float | None = None
    hi: float | None = None
    value: float | int | bool | None = None
    values: list[float | int | bool | str] | None = None
    offsets: list[int] | None = None  # a jagged tensor's, exactly (never shrunk or seeded)
    ragged_dim: int = 1
    # False: a graph input that was no leaf in the real run (x + 1 of an x that requires grad), rebuilt as
    # none (pt2kit_portable.as_input): a backend that looks at is_leaf sees what it saw in the script
    leaf: bool = True
    # the script's storage offset, and its storage's size in elements where larger than the layout reaches
    # (a slice of a larger tensor): with shape and stride, what pt2kit_portable.make_tensor lays it out by
    offset: int = 0
    storage: int = 0
    # the graph inputs that shared one storage in the script (``f(a, a[1])``) share a key (the first one's
    # name); a candidate's later input of a group is a view of the first one's storage (``view_of``: its
    # position in the candidate's inputs), so a write into one is read through the other, as in the script
    shares: str | None = None
    view_of: int | None = None

    def as_tuple(self) -> tuple:
        if self.kind == "scalar":
            return ("scalar", self.value)
        t = (self.kind, list(self.shape), list(self.stride), self.dtype, self.device, self.lo, self.hi)
        if self.kind == "jagged":
            t = (*t, list(self.offsets or []), self.ragged_dim)
        layout = {k: v for k, v in (("offset", self.offset), ("storage", self.storage), ("view_of", self.view_of))
                  if v or (k == "view_of" and v is not None)}
        if not self.leaf or layout:
            t = (*t, None if self.values is None else list(self.values), *([NON_LEAF] if not self.leaf else []))
            return (*t, layout) if layout else t
        return t if self.values is None else (*t, list(self.values))

    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n if self.kind in TENSORS else 0


class Node(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    expr: str = ""  # "" for a placeholder
    deps: list[str] = []
    op: str = ""  # aten.relu.default; "input" for a placeholder
    spec: Spec | None = None  # None: the value cannot be fed in (a tuple, None)
    # a constant the graph holds (an index list's tensor, a lifted constant), written by value
    # (``torch.tensor([0, 0])``): a candidate that reads it makes it in its forward, so the compiler sees a
    # constant again, never an input
    const: str | None = None
    place: str | None = None  # the user's file:line
    code: str | None = None  # the user's source line
    output: bool = False  # an output of the captured graph
    body: list[str] = []  # a higher-order op's subgraph: the nested function's lines (expr is DEFINED)
    # a Dynamo graph's value that required grad in the real training step (a parameter, a value computed
    # from one; not a BatchNorm buffer, not the model's input): fed to a candidate run as a training
    # step, it is a leaf that requires grad, and nothing else is
    grad: bool = False
    # its values are memory no op defined (torch.empty's, or read from it: pt2kit_portable.undefined_nodes):
    # never a candidate's output, since eager and compiled differ there without a bug
    undefined: bool = False


UNWRITABLE = "__unwritable__"  # a node's expr where the call has no standalone source form
DEFINED = "__defined__"  # a node's expr where ``body`` defines it (a subgraph: kept whole with its op)


class Graph(msgspec.Struct, frozen=True, kw_only=True):
    index: int  # which of the model's graphs
    nodes: list[Node]
    dynamic: bool = False
    level: str = "aten"  # aten: AOTAutograd's forward graph; dynamo: the graph Dynamo hands a backend
    subgraph: str | None = None  # a higher-order op's subgraph of graph ``index`` that ran: "cond → true_graph_0"
    # forward: run as it is (an inference graph, or a training forward); backward: AOTAutograd's backward
    # graph, run as it is (its inputs the forward's saved values and the tangents); joint: run as a
    # training step (forward, the loss, backward: the backend compiles both), judged by the gradients
    phase: str = "forward"

    @property
    def compute(self) -> list[Node]:
        """The nodes a candidate may keep: every call a standalone file can write. A call it cannot
        (a Dynamo-internal function, an argument with no source form) is left out of every candidate:
        what reads its value is fed that value as an input, like any value cut off (and, where the
        value cannot be fed, a tuple say, is left out too)."""
        specs = {n.name: n.spec for n in self.nodes}
        out, gone = [], set()
        for n in self.nodes:
            if n.expr == UNWRITABLE or any(d in gone and specs.get(d) is None for d in n.deps):
                gone.add(n.name)
            elif n.expr:
                out.append(n)
        return out

    @property
    def unwritable(self) -> list[Node]:
        return [n for n in self.nodes if n.expr == UNWRITABLE]

    def by_name(self) -> dict[str, Node]:
        return {n.name: n for n in self.nodes}


def searched(graphs: list[Graph], phase: str | None, train: bool) -> list[Graph]:
    """The graphs a failure is searched in, in order. A failure of the backward (``phase`` "backward"):
    each backward graph as it is (what the backend compiles), then each of Dynamo's graphs run as a
    training step (``joint``: what a backend of the user's file makes of it, forward and backward). A
    train-mode failure of unknown phase (a crash): the forward graphs, then those. Else the forward
    graphs, as inference runs them."""
    fwd = [g for g in graphs if g.phase == "forward"]
    bwd = [g for g in graphs if g.phase == "backward"] + [
        msgspec.structs.replace(g, phase="joint") for g in graphs if g.level == "dynamo" and g.subgraph is None]
    if phase == "backward":
        return bwd
    return fwd + bwd if train and phase is None else fwd


class Candidate(msgspec.Struct, frozen=True, kw_only=True):
    source: str  # class Repro(torch.nn.Module): ...
    inputs: list[Spec]
    nodes: int  # compute nodes
    ops: list[str]
    key: str  # hash of what a query depends on
    names: list[str] = []  # the inputs' node names
    grad: list[bool] = []  # per input: a leaf that requires grad when the candidate runs as a training step

    def exact(self) -> set[str]:
        """The inputs fed their real values."""
        return {n for n, s in zip(self.names, self.inputs, strict=True) if s.values is not None}

    @property
    def input_numel(self) -> int:
        return sum(s.numel() for s in self.inputs)


def build(graph: Graph, keep: set[str], *, rename: dict[int, int] | None = None,
          outputs: set[str] | None = None, retype: dict[str, str] | None = None,
          exact: bool | set[str] = False, consts: dict[str, str] | None = None,
          relayout: str | None = None) -> Candidate | None:
    """The candidate of the kept compute nodes, or None when it cannot stand alone.

    Outputs are the kept nodes nobody kept reads (and kept outputs of the original graph).
    ``rename`` maps a dimension size to a smaller one in input shapes, int inputs (a dynamic graph's
    symbolic sizes) and the expressions' integer literals (shape shrinking). ``retype`` maps an input
    dtype to another (dtype shrinking). ``exact``: which inputs are fed their real values where they
    have them (all, or those named); the rest are seeded. ``consts`` maps a float literal of the
    expressions to a simpler one (constant shrinking). ``relayout`` (one of :data:`LAYOUTS`) lays out each
    input a cut made (a value some dropped node computed, not a graph input) otherwise than traced."""
    nodes = graph.nodes
    by = graph.by_name()
    kept = [n for n in nodes if n.expr and n.name in keep]
    if not kept:
        return None
    kept_names = {n.name for n in kept}
    read: set[str] = set()
    params: dict[str, Node] = {}
    for n in kept:
        for d in n.deps:
            read.add(d)
            if d not in kept_names and d not in params:
                if by[d].spec is None and by[d].const is None:
                    return None
                params[d] = by[d]
    order = {n.name: i for i, n in enumerate(nodes)}
    held = [p for p in sorted(params.values(), key=lambda p: order[p.name]) if p.const is not None]
    fed = sorted((p for p in params.values() if p.const is None), key=lambda p: order[p.name])
    outs = [n for n in kept if n.spec is not None and n.spec.kind in TENSORS and not n.undefined
            and (n.name not in read or n.output or (outputs is not None and n.name in outputs))]
    if outputs is not None:
        outs = [n for n in kept if n.name in outputs and not n.undefined] or outs
    if not outs:
        return None
    lines = ["class Repro(torch.nn.Module):", f"    def forward(self{''.join(', ' + p.name for p in fed)}):",
             *(f"        {p.name} = {p.const}" for p in held)]
    last_place = None
    for n in kept:
        if n.place and n.place != last_place:
            code = f"  {n.code.strip()}" if n.code else ""
            # the user's path and line, from the record: one escaped comment line (pt2kit_portable's rule)
            lines.append(f"        # {escape(n.place + code)}"[:160])
            last_place = n.place
        for text in n.body or [f"{n.name} = {n.expr}"]:
            text = _resize(text, rename) if rename else text
            text = _FLOAT.sub(lambda m: consts.get(m.group(0), m.group(0)), text) if consts else text
            lines.append(f"        {text}")
    lines.append(f"        return ({''.join(o.name + ', ' for o in outs)})")
    inputs = [p.spec if exact is True or (exact and p.name in exact) else _seeded(p.spec) for p in fed]  # type: ignore[arg-type]
    if relayout:
        inputs = [s if p.op == "input" else laid_out(s, relayout) or s for p, s in zip(fed, inputs, strict=True)]  # type: ignore[arg-type]
    if rename:
        resized = [_resize_spec(s, rename) for s in inputs]
        if any(s.values is not None and r.shape != s.shape for s, r in zip(inputs, resized, strict=True)):
            return None  # real values have the real shape
        inputs = resized
    if retype:
        inputs = [msgspec.structs.replace(s, dtype=retype[s.dtype]) if s.dtype in retype else s for s in inputs]
    inputs = _aliased(inputs)  # type: ignore[arg-type]
    return _candidate("\n".join(lines) + "\n", inputs, [n.op for n in kept], [p.name for p in fed],
                      [p.grad for p in fed])


# the other layouts a cut's input is tried in, where the traced one loses the failure: the compiler lays out an
# intermediate as it likes (Inductor, a buffer read by frames), and the traced value's layout (eager's: dense,
# row-major) may not be the one the failure needs. Dense in the reversed dimension order (column-major), or
# with the last two dimensions swapped (a transposed matrix): the layouts a kernel most often gets otherwise
LAYOUTS = ("reversed", "swapped")


def laid_out(spec: Spec | None, how: str) -> Spec | None:
    """``spec`` dense in the dimension order ``how`` names (:data:`LAYOUTS`), from its storage's start; None where
    that is no other layout than its own (fewer than two dimensions of size > 1, an expanded or aliased input,
    real values fed)."""
    if spec is None or spec.kind != "tensor" or spec.values is not None or spec.shares is not None or 0 in spec.stride:
        return None
    big = [i for i, d in enumerate(spec.shape) if d > 1]
    if len(big) < 2 or len(spec.stride) != len(spec.shape):
        return None
    order = sorted(range(len(spec.shape)), key=lambda i: -spec.stride[i])  # outermost first, as laid out now
    order = order[::-1] if how == "reversed" else [i for i in order if i not in big[-2:]] + [big[-1], big[-2]]
    stride, acc = [0] * len(spec.shape), 1
    for i in reversed(order):
        stride[i] = acc
        acc *= max(spec.shape[i], 1)
    if [stride[i] for i in big] == [spec.stride[i] for i in big]:
        return None
    return msgspec.structs.replace(spec, stride=stride, offset=0, storage=0)


def _aliased(inputs: list[Spec]) -> list[Spec]:
    """Each input of a storage group after its group's first a view of the first one's storage, which is made
    large enough to hold every view of the group."""
    first: dict[str, int] = {}
    out = list(inputs)
    for i, s in enumerate(inputs):
        if s.kind == "tensor" and s.shares is not None:
            j = first.setdefault(s.shares, i)
            if j != i:
                out[i] = msgspec.structs.replace(s, view_of=j, storage=0)  # the storage is the first one's
                need = max(s.storage, _reach(s))
                if need > max(out[j].storage, _reach(out[j])):
                    out[j] = msgspec.structs.replace(out[j], storage=need)
    return out


def _reach(s: Spec) -> int:
    """The elements of storage a tensor's layout reaches, from the storage's start."""
    return storage_reach(s.shape, s.stride, s.offset)


def _candidate(source: str, inputs: list[Spec], ops: list[str], names: list[str], grad: list[bool]) -> Candidate:
    text = source + repr([s.as_tuple() for s in inputs]) + (repr(grad) if any(grad) else "")
    return Candidate(source=source, inputs=inputs, nodes=len(ops), ops=ops, key=hashlib.sha256(text.encode()).hexdigest()[:16],
                     names=names, grad=grad)


def _seeded(spec: Spec | None) -> Spec | None:
    return spec if spec is None or spec.values is None else msgspec.structs.replace(spec, values=None)


def seeded(c: Candidate, names: set[str]) -> Candidate:
    """``c`` with the inputs named fed seeded values instead of their real ones."""
    inputs = [_seeded(s) if n in names else s for n, s in zip(c.names, c.inputs, strict=True)]
    return _candidate(c.source, inputs, c.ops, c.names, c.grad)  # type: ignore[arg-type]


_INT = re.compile(r"(?<![\w.])(-?\d+)(?![\w.])")
# a float literal as repr writes it (0.7071067811865476, 1e-05, -3.5e+38), not part of a name
_FLOAT = re.compile(r"(?<![\w.])-?(?:\d+\.\d+(?:e[-+]?\d+)?|\d+e[-+]?\d+)(?![\w.])")


def floats(graph: Graph, keep: set[str]) -> list[str]:
    """The float literals of the kept expressions that have a simpler value (``simpler``), in order."""
    found = [m.group(0) for n in graph.nodes if n.expr and n.name in keep for m in _FLOAT.finditer(n.expr)]
    return [f for f in dict.fromkeys(found) if simpler(f) is not None]


def simpler(literal: str) -> str | None:
    """A literal of more than two significant digits to one (0.7071067811865476 -> 0.7, 0.044715 ->
    0.04); None for one already that short (0.5, 2.5, 1e-05)."""
    v = float(literal)
    return None if float(f"{v:.2g}") == v else repr(float(f"{v:.1g}"))


def simplified(literals: list[str]) -> dict[str, str]:
    """``build``'s consts: each literal to its simpler value."""
    return {k: s for k in literals if (s := simpler(k)) is not None}


def _resize(expr: str, rename: dict[int, int]) -> str:
    return _INT.sub(lambda m: str(rename.get(int(m.group(1)), m.group(1))) if int(m.group(1)) > 1 else m.group(1),
                    expr)


def _resize_spec(spec: Spec, rename: dict[int, int]) -> Spec:
    if spec.kind == "jagged":  # its offsets pin its values' sizes: kept whole
        return spec
    if spec.kind != "tensor":
        # an int fed in is a size as often as not (a dynamic graph's symbolic sizes): it moves with them
        v = spec.value
        if isinstance(v, int) and not isinstance(v, bool) and v > 1 and v in rename:
            return msgspec.structs.replace(spec, value=rename[v])
        return spec
    shape = [rename.get(d, d) for d in spec.shape]
    stride, acc = [0] * len(shape), 1
    # a shrunk input is dense in the original's dimension order, from its storage's start; an expanded
    # dimension (stride 0) stays expanded
    for i in sorted(range(len(shape)), key=lambda i: spec.stride[i] if i < len(spec.stride) else 0):
        if i < len(spec.stride) and spec.stride[i] == 0 and shape[i] > 1:
            continue
        stride[i] = acc
        acc *= max(shape[i], 1)
    return msgspec.structs.replace(spec, shape=shape, stride=stride, offset=0, storage=0, shares=None)


def sizes(c: Candidate) -> list[int]:
    """The dimension sizes of a candidate's inputs, largest first (what shape shrinking tries)."""
    return sorted({d for s in c.inputs if s.kind == "tensor" for d in s.shape if d > 1}, reverse=True)
