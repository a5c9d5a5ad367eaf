"""The first aten node where the compiled program leaves the reference: a library function.

1. Capture the aten graph(s) AOTAutograd makes for the model, and the real arguments of their first
   call: the forward graphs (:func:`localize`), or the backward graphs of a training step
   (:func:`localize_backward`, each fed the values its forward saved and the tangents).
2. Reference values of every node: the graph interpreted eagerly (in float64 for ``eager64``).
3. Test values: one compile, with the test backend, of a copy of the graph whose outputs are all
   its tensor nodes; the first node in graph order that fails the tolerance and whose compiled value
   alone (the rest of the graph run eagerly from it: :mod:`pt2kit.runtime.worker.reach`) makes a failing
   output of the graph fail is the answer. A divergence masked away on every path (the mask of
   ``where(b, x, x)``) is passed over, and the narration says so; where none reaches alone (the outputs
   fail only from several together), the first, saying it does not reach a failing output.
   With a float64 run (``--ref eager64``, or kdiff's default accuracy rule), a node fails only if it
   is also further from float64 than eager float32 is (same()'s RMSE rule): rounding noise is not a
   divergence.
4. When fusion hides the difference in that all-outputs compile, or that graph does not compile
   (a view Inductor cannot express as an output, say), bisect over prefixes of the graph (each a
   compile ending at one node): O(log n) compiles, assuming that once a value has diverged the
   later ones stay diverged.

A backward graph's float64 reference is the same graph interpreted in float64 on its captured
arguments cast to float64, not the backward of a float64 copy of the model: both sides of the
comparison then start from the very same saved values and tangents, so what is judged is the
backward graph alone (the forward's rounding, which already passed, is not counted against it), and
its nodes keep the names the compiled copy has (a float64 model's joint graph may decompose and
name differently). A backward divergence names the backward node and op (``threshold_backward``),
the forward op it differentiates (AOTAutograd's ``seq_nr`` link) and that forward op's user line and
module (a backward node's own stack trace where the forward op has none).

Never named: nodes whose value is uninitialised memory (``empty``, ``empty_like``, ``new_empty``,
``empty_strided``..., and what reads it: pt2kit_portable's undefined_nodes): their values differ between any
two runs and mean nothing.
A failure that leaves no answer raises :class:`LocalizeError` with the compiler's full message.
Not guaranteed: a backward divergence caused by what the compiled forward saved (the backward is
judged on eager's saved values), or by the autograd glue between graphs: no node is named then.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from pt2kit.runtime.shims.torchapi import backward_compiler, reset_dynamo, run_backward
from pt2kit.runtime.worker.accuracy import accuracy_rule, default_tolerances, float64_mode
from pt2kit.runtime.worker.aotgraphs import TrainingGraphs, forward_graphs, forward_node_of, training_graphs
from pt2kit.runtime.worker.fxmeta import node_place
from pt2kit.runtime.worker.hops import materialise
from pt2kit_portable import undefined_nodes

from .backends import Backend, to_float64
from .metrics import Comparison, compare


class LocalizeError(Exception):
    """Localisation could not finish; the message keeps the compiler's full text."""


@dataclass
class Divergence:
    graph: int
    index: int  # position among the graph's tensor-valued nodes
    node: str
    op: str | None
    source: str | None
    code: str | None
    module: str | None
    comparison: Comparison
    ref: torch.Tensor
    test: torch.Tensor
    compiles: int
    atol: float
    rtol: float
    subgraph: str | None = None  # the higher-order op's subgraph it lies in: "cond → true_graph_0"
    phase: str = "forward"  # forward | backward: the graph the node belongs to
    forward_op: str | None = None  # phase backward: the forward op the node differentiates
    note: str | None = None  # an earlier divergence that does not reach a failing output, or that this one does not


def tensor_nodes(gm: torch.fx.GraphModule) -> list[torch.fx.Node]:
    """The nodes whose values are compared: tensor-valued calls, uninitialised memory (and what reads it: a
    view of torch.empty's) left out by pt2kit_portable's one rule."""
    undefined = undefined_nodes(gm.graph)
    return [n for n in gm.graph.nodes if n.op == "call_function" and isinstance(n.meta.get("val"), torch.Tensor)
            and n.name not in undefined]


def interpret(gm: torch.fx.GraphModule, args: list[Any], *, float64: bool, seed: int | None = None
              ) -> dict[str, torch.Tensor]:
    wanted = {n.name for n in tensor_nodes(gm)}
    values: dict[str, torch.Tensor] = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n: torch.fx.Node) -> Any:
            out = super().run_node(n)
            if n.name in wanted and isinstance(out, torch.Tensor):
                values[n.name] = out.detach().clone()
            return out

    _reseed(seed)
    with torch.no_grad(), (float64_mode() if float64 else contextlib.nullcontext()):
        Recorder(gm).run(*(to_float64(args) if float64 else args))
    return values


def with_outputs(gm: torch.fx.GraphModule, nodes: list[torch.fx.Node]) -> torch.fx.GraphModule:
    """A copy of ``gm`` that returns the named nodes (and nothing it no longer needs)."""
    g = copy.deepcopy(gm)
    names = {n.name for n in nodes}
    keep = [n for n in g.graph.nodes if n.name in names]
    out = next(n for n in g.graph.nodes if n.op == "output")
    out.args = (tuple(keep),)
    g.graph.eliminate_dead_code()
    g.recompile()
    return materialise(g)


def _reseed(seed: int | None) -> None:
    """Every run of a graph draws the same random numbers (a training step's dropout; with Inductor's
    fallback_random the compiled run draws eager's)."""
    if seed is not None:
        torch.manual_seed(seed)


def _run_compiled(g: torch.fx.GraphModule, args: list[Any], backend: Backend, seed: int | None = None
                  ) -> list[torch.Tensor]:
    reset_dynamo()
    _reseed(seed)
    if backend.backward is not None:
        return run_backward(backend.backward, g, args)
    with torch.no_grad():
        out = torch.compile(g, backend=backend.compile)(*args)
    reset_dynamo()
    return list(out)


def localize(model: Any, call: Callable[[Any], Any], *, ref: Backend, test: Backend, atol: float | None = None,
             rtol: float | None = None, equal_nan: bool = False, fp64_rule: bool = False,
             on_step: Callable[[str], None] | None = None, seed: int | None = None) -> Divergence | None:
    """Find the first diverging node; ``call(fn)`` runs ``fn`` on the model's inputs.

    ``fp64_rule``: judge nodes by PyTorch's accuracy rule against a float64 interpretation of the
    graph (always so with a float64 reference). ``on_step`` hears each step ("graph 0: bisecting, step 2
    of ~6"), for progress. ``seed``: set before every run of a graph, so random ops (a model in train
    mode's dropout) draw alike in each."""
    if test.compile is None:
        return None
    kw = _settings(ref, test, atol, rtol, equal_nan, fp64_rule, on_step, seed)
    graphs = list(enumerate(forward_graphs(model, call)))
    found = _first(graphs, kw)
    return None if found is None else _named_by_producer(found, graphs[found.graph][1][0])


def localize_backward(model: Any, call: Callable[[Any], Any], *, ref: Backend, test: Backend,
                      atol: float | None = None, rtol: float | None = None, equal_nan: bool = False,
                      fp64_rule: bool = False, on_step: Callable[[str], None] | None = None,
                      seed: int | None = None) -> Divergence | None:
    """:func:`localize` in the backward graphs: ``call(fn)`` runs one forward and backward of ``fn``
    (a training step). Graphs are searched in the order their backwards run (the last forward's
    first); the answer has ``phase`` "backward" and ``forward_op``. An ``aot_autograd`` backend's graphs
    go to its backward compiler, as AOTAutograd hands them over (compiled as inference graphs, they would
    reach its forward compiler alone)."""
    if test.compile is None:
        return None
    test = dataclasses.replace(test, backward=backward_compiler(test.compile))
    graphs = training_graphs(model, call)
    found = _first([(gi, (g.backward, g.backward_args)) for gi, g in reversed(list(enumerate(graphs)))
                    if g.backward is not None], _settings(ref, test, atol, rtol, equal_nan, fp64_rule, on_step, seed))
    return None if found is None else _in_backward(found, graphs[found.graph])


def _settings(ref: Backend, test: Backend, atol: float | None, rtol: float | None, equal_nan: bool, fp64_rule: bool,
              on_step: Callable[[str], None] | None, seed: int | None) -> dict[str, Any]:
    return {"ref": ref, "test": test, "atol": atol, "rtol": rtol, "equal_nan": equal_nan, "fp64_rule": fp64_rule,
            "step": on_step or (lambda _: None), "seed": seed}


def _first(graphs: list[tuple[int, tuple[torch.fx.GraphModule, list[Any]]]], kw: dict[str, Any]) -> Divergence | None:
    compiles = 0
    for gi, (gm, args) in graphs:
        found, compiles = _locate(gi, gm, args, None, compiles, kw)
        if found is not None:
            return found
    return None


def _in_backward(found: Divergence, g: TrainingGraphs) -> Divergence:
    """A backward graph's answer, placed at the forward op it differentiates (the user's line). One
    output of a multi-output backward op (``native_layer_norm_backward``'s grad_input: a ``getitem``
    node) is named by that op."""
    node = next((n for n in g.backward.graph.nodes if n.name == found.node), None) if g.backward else None
    if node is None or found.subgraph is not None:
        return dataclasses.replace(found, phase="backward")
    fwd = forward_node_of(node, g.forward)
    place = [found.source, found.code, found.module]
    if fwd is not None:
        place = [mine if mine is not None else own for mine, own in zip(node_place(fwd), place, strict=True)]
    op = _named_by_producer(found, g.backward).op
    return dataclasses.replace(found, phase="backward", op=op, forward_op=str(fwd.target) if fwd is not None else None,
                               source=place[0], code=place[1], module=place[2])


def _named_by_producer(found: Divergence, gm: torch.fx.GraphModule) -> Divergence:
    """One output of a multi-output op (``aten.max.dim``'s indices, ``native_layer_norm_backward``'s
    grad_input) is a ``getitem`` node, the first tensor that can differ: the answer names the op that made
    it, not ``getitem`` (a title "wrong results in <built-in function getitem>" names no computation)."""
    node = next((n for n in gm.graph.nodes if n.name == found.node), None) if found.subgraph is None else None
    producer = node.args[0] if node is not None and node.target is operator.getitem and node.args else None
    if isinstance(producer, torch.fx.Node) and producer.op == "call_function":
        return dataclasses.replace(found, op=str(producer.target))
    return found


def _locate(gi: int, gm: torch.fx.GraphModule, args: list[Any], path: str | None, compiles: int,
            kw: dict[str, Any]) -> tuple[Divergence | None, int]:
    """:func:`_localize_graph`, then into the higher-order op it names, where one of its subgraphs
    diverges (:mod:`.descend`); else the op itself, at the user's line that called it."""
    from pt2kit.runtime.worker.descend import entered, hop_of
    from pt2kit.runtime.worker.hops import hop_name

    found, compiles = _localize_graph(gi, gm, args, compiles=compiles, **kw)
    hop = hop_of(gm, found.node) if found is not None else None
    if found is None or hop is None:
        return (found if found is None else dataclasses.replace(found, subgraph=path)), compiles
    name = hop_name(hop.target)
    try:
        subs = entered(gm, args, hop)
    except Exception:  # the op's arguments could not be had: the op is the answer
        subs = []
    for attr, sub, sub_args in subs:
        here = " → ".join(p for p in (path, name, attr) if p)
        kw["step"](f"localize: into {here}")
        try:
            deeper, compiles = _locate(gi, sub, sub_args, here, compiles, kw)
        except LocalizeError:
            deeper = None
        if deeper is not None:
            return dataclasses.replace(deeper, compiles=compiles), compiles
    source, code, module = node_place(hop)
    return dataclasses.replace(found, op=f"higher_order.{name}", source=source, code=code, module=module,
                               subgraph=path), compiles


def _mattering(gm: torch.fx.GraphModule, args: list[Any], nodes: list[torch.fx.Node], bad: list[tuple[Any, ...]],
               verdict: Callable[..., tuple[bool, Comparison, float, float]], found: Callable[..., Divergence],
               seed: int | None) -> Divergence:
    """Of the diverging nodes ``bad`` ((index, compiled value, comparison, atol, rtol), graph order), the
    first whose divergence alone makes a failing output of the graph fail: one masked away on every path
    (the mask of ``where(b, x, x)``) is not the culprit. None reaching one (the outputs fail from several
    together): the first, saying so."""
    from pt2kit.runtime.worker.reach import first_reaching

    outs = {n.name for n in next(n for n in gm.graph.nodes if n.op == "output").all_input_nodes}
    by_index = {i: rest for i, *rest in bad}
    failing = [nodes[i].name for i in by_index if nodes[i].name in outs]
    first = found(*bad[0])
    if not failing:  # no output of the graph fails in that compile: nothing to trace paths to
        return first
    by_name = {n.name: n for n in nodes}
    name = first_reaching(gm, args, [(nodes[i].name, rest[0]) for i, *rest in bad], failing,
                          lambda o, v: verdict(by_name[o], v)[0], seed=seed)
    if name is None:
        return dataclasses.replace(first, note=f"node {first.node} ({first.op}) is the first divergence, but its "
                                   "divergence alone does not reach a failing output")
    i = next(i for i in by_index if nodes[i].name == name)
    chosen = found(i, *by_index[i])
    if i == bad[0][0]:
        return chosen
    return dataclasses.replace(chosen, note=f"an earlier divergence, node {first.node} ({first.op}), does not reach "
                               f"a failing output ({', '.join(failing)}): not the culprit")


def _localize_graph(gi: int, gm: torch.fx.GraphModule, args: list[Any], *, ref: Backend, test: Backend,
                    atol: float | None, rtol: float | None, equal_nan: bool,
                    compiles: int, fp64_rule: bool, step: Callable[[str], None], seed: int | None
                    ) -> tuple[Divergence | None, int]:
    nodes = tensor_nodes(gm)
    if not nodes:
        return None, compiles
    step(f"localize: graph {gi}, {len(nodes)} nodes, every node an output")
    refs = interpret(gm, args, float64=ref.float64, seed=seed)
    fp64: dict[str, torch.Tensor] | None = refs if ref.float64 else None
    baseline = refs if not ref.float64 else None
    if fp64_rule or ref.float64:
        try:
            fp64 = fp64 or interpret(gm, args, float64=True, seed=seed)
            baseline = baseline or interpret(gm, args, float64=False, seed=seed)
        except Exception:  # a graph float64 cannot run: judge by assert_close alone
            fp64 = None if not ref.float64 else fp64

    def verdict(node: torch.fx.Node, value: torch.Tensor) -> tuple[bool, Comparison, float, float]:
        r = refs[node.name]
        da, dr = default_tolerances(r.dtype, value.dtype)
        a = da if atol is None else atol
        rt = dr if rtol is None else rtol
        c = compare(r, value.to(r.device), atol=a, rtol=rt, equal_nan=equal_nan)
        bad = not c.passed
        if bad and fp64 is not None and baseline is not None and node.name in fp64 \
                and (value.is_floating_point() or value.is_complex()):
            f, b = fp64[node.name], baseline[node.name]
            base = compare(f, b.to(f.device), atol=a, rtol=rt, equal_nan=equal_nan)
            rule = accuracy_rule(value, b.to(value.device), f.to(value.device))
            bad = not rule.passed or c.nan_test > base.nan_test
        return bad, c, a, rt

    def found(i: int, value: torch.Tensor, c: Comparison, a: float, rt: float) -> Divergence:
        n = nodes[i]
        source, code, module = node_place(n)
        return Divergence(gi, i, n.name, str(n.target), source, code, module, c, refs[n.name], value,
                          compiles, a, rt)

    compiles += 1
    try:
        values = _run_compiled(with_outputs(gm, nodes), args, test, seed)
    except Exception:  # the all-outputs graph does not compile: bisection still can
        values = None
    bad: list[tuple[Any, ...]] = []
    for i, (n, v) in enumerate(zip(nodes, values, strict=True) if values is not None else ()):
        if n.name in refs and v.shape == refs[n.name].shape:
            judged = verdict(n, v)
            if judged[0]:
                bad.append((i, v, *judged[1:]))
    if bad:
        return _mattering(gm, args, nodes, bad, verdict, found, seed), compiles
    # fusion may hide it when everything is an output: bisect over prefixes
    errors: list[str] = []

    def probe(i: int) -> tuple[bool, torch.Tensor, Comparison, float, float] | None:
        nonlocal compiles
        compiles += 1
        try:
            (v,) = _run_compiled(with_outputs(gm, [nodes[i]]), args, test, seed)
        except Exception as e:
            errors.append(f"node {nodes[i].name} ({nodes[i].target}): {type(e).__name__}: {e}")
            return None
        if v.shape != refs[nodes[i].name].shape:
            return None
        bad, c, a, rt = verdict(nodes[i], v)
        return bad, v, c, a, rt

    lo, hi = 0, len(nodes) - 1
    total = max(1, (len(nodes) - 1).bit_length()) + 1
    done = 1
    step(f"localize: graph {gi}, bisecting {len(nodes)} nodes, step {done} of ~{total}")
    last = probe(hi)
    if last is None:
        raise LocalizeError(f"graph {gi}: no prefix ending at its last node compiles; " + "; ".join(errors))
    if not last[0]:
        return None, compiles
    last_bad = (hi, *last[1:])
    while lo < hi:
        mid = (lo + hi) // 2
        done += 1
        step(f"localize: graph {gi}, bisecting {len(nodes)} nodes, step {done} of ~{total}")
        at, got = mid, probe(mid)
        while got is None and at + 1 < hi:  # that prefix would not compile: judge the next one
            at += 1
            got = probe(at)
        if got is None:  # none between mid and hi compiles: hi is the first node that can be judged
            break
        if got[0]:
            hi, last_bad = at, (at, *got[1:])
        else:
            lo = at + 1
    return found(*last_bad), compiles
