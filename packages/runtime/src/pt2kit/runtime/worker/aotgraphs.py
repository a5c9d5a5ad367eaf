"""The aten graphs AOTAutograd hands a compiler in a real run of a model: each forward graph Dynamo
compiles, with the real arguments of its first call (:func:`forward_graphs`), and optionally Dynamo's
graph; for a training step, each one's forward and backward (:func:`training_graphs`). In-process, on a
model file the tool loaded: not ``pt2kit capture``, which runs a user's script (packages/capture).

Shared by kdiff (localisation) and minify (the graph it cuts). Guarantees: the model runs under
``torch.no_grad`` (a training step for :func:`training_graphs`) with Dynamo reset before and after,
so no compiled code of this run stays behind; arguments are copies, safe to run again (a graph that
keeps its input mutations writes them: run it on copies of them); :func:`forward_graphs` keeps a graph whose
run raised (eager's own error, an integer divided by zero, which a compiled kernel may turn into a signal)
and raises only where no graph ran. Not
guaranteed: a graph whose first call never happens (left out; a backward that never runs is None),
symbolic sizes without a hint (kept symbolic).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from pt2kit_portable import copy_inputs

from ..shims.torchapi import aot_autograd, boxed, min_cut_partition, reset_dynamo


def concrete(a: Any) -> Any:
    """A Dynamo graph's example argument as a value it runs on outside Dynamo: a tensor copied, a
    symbolic size (a dynamic-shape graph's SymInt) as the int it stands for in this call. Private
    torch API (``SymInt.node.hint``), kept here alone."""
    if isinstance(a, torch.Tensor):  # in its layout: an expanded gradient stays expanded, a view keeps its offset
        return copy_inputs(a.detach())
    if isinstance(a, torch.SymInt):
        hint = getattr(getattr(a, "node", None), "hint", None)
        try:
            return int(hint) if hint is not None else a
        except (AttributeError, TypeError, RuntimeError):  # a nested int (an NJT's ragged size): no int
            return a
    return a


def _call_args(args: Any) -> list[Any]:
    """A call's arguments as :func:`concrete` makes each, the tensors copied together by every run's rule
    (pt2kit_portable.copy_inputs): arguments that shared a storage in the call (``f(a, a[1])``) share the
    copy, so a graph that writes into one reads the write through the other, as it did there."""
    copies = copy_inputs([a.detach() if isinstance(a, torch.Tensor) else None for a in args])
    return [c if isinstance(a, torch.Tensor) else concrete(a) for a, c in zip(args, copies, strict=True)]


def forward_graphs(model: Any, call: Callable[[Any], Any], dynamo: list[Any] | None = None, *,
                   keep_input_mutations: bool = False) -> list[tuple[torch.fx.GraphModule, list[Any]]]:
    """(aten forward graph, the real arguments of its first call) for each graph Dynamo compiles.

    ``dynamo``, when given, also receives (Dynamo's graph, its real arguments) for each, before
    AOTAutograd traces it: what a torch.compile backend is handed, kept even where AOTAutograd fails.
    ``keep_input_mutations``: a write into an input stays in the graph, an ``aten.copy_`` into it where
    the graph wrote it, as Inductor and aot_eager are handed it (their ``keep_inference_input_mutations``),
    so an op ordered against that write is there to cut (else the write is one more output, applied
    outside the graph; running such a graph writes its arguments: run it on copies)."""
    from functorch.compile import make_boxed_func
    captured: list[dict[str, Any]] = []

    def fw(gm: torch.fx.GraphModule, _example: list[Any]) -> Any:
        slot: dict[str, Any] = {"gm": gm, "args": None}
        captured.append(slot)

        def run(*args: Any) -> Any:
            if slot["args"] is None:
                slot["args"] = _call_args(args)
            return gm(*args)

        return make_boxed_func(run)

    aot = aot_autograd(fw_compiler=fw, keep_inference_input_mutations=keep_input_mutations)

    def backend(gm: torch.fx.GraphModule, example: list[Any]) -> Any:
        if dynamo is not None:
            dynamo.append((gm, _call_args(example)))
        return aot(gm, example)

    reset_dynamo()
    try:
        with torch.no_grad():
            call(torch.compile(model, backend=backend))
    except Exception:  # a graph that raised as it ran (an integer divided by zero) was handed on all the same
        if not any(s["args"] is not None for s in captured):
            raise
    finally:
        reset_dynamo()
    return [(s["gm"], s["args"]) for s in captured if s["args"] is not None]


@dataclass
class TrainingGraphs:
    """One Dynamo graph's training: the forward and backward aten graphs AOTAutograd splits its joint
    graph into (with Inductor's partitioner), each with the real arguments of its first call. The
    backward's arguments are the values the forward saved for it, then the tangents (the gradients
    of the forward's outputs); ``backward`` is None when no backward ran through this graph."""

    forward: torch.fx.GraphModule
    forward_args: list[Any]
    backward: torch.fx.GraphModule | None = None
    backward_args: list[Any] | None = None


def training_graphs(model: Any, call: Callable[[Any], Any], dynamo: list[Any] | None = None
                     ) -> list[TrainingGraphs]:
    """Forward and backward aten graphs of each graph Dynamo compiles while ``call(compiled model)``
    runs, which must run a backward (e.g. :func:`pt2kit.runtime.worker.training.train_step`). Graphs are in
    the order Dynamo compiled them; a backward is paired with its own forward (one AOTAutograd per
    Dynamo graph), whatever order the backwards run in. ``dynamo`` as for :func:`forward_graphs`."""
    captured: list[dict[str, Any]] = []

    def recorder(slot: dict[str, Any], key: str) -> Callable[[torch.fx.GraphModule, list[Any]], Any]:
        def compiler(gm: torch.fx.GraphModule, _example: list[Any]) -> Any:
            slot[key] = gm

            def run(*args: Any) -> Any:
                if slot.get(key + "_args") is None:
                    slot[key + "_args"] = _call_args(args)
                return gm(*args)

            return boxed(run)

        return compiler

    def backend(gm: torch.fx.GraphModule, example: list[Any]) -> Any:
        if dynamo is not None:
            dynamo.append((gm, _call_args(example)))
        slot: dict[str, Any] = {}
        captured.append(slot)
        aot = aot_autograd(fw_compiler=recorder(slot, "forward"), bw_compiler=recorder(slot, "backward"),
                           partition_fn=min_cut_partition())
        return aot(gm, example)

    reset_dynamo()
    with torch.enable_grad():
        call(torch.compile(model, backend=backend))
    reset_dynamo()
    return [TrainingGraphs(s["forward"], s["forward_args"], s.get("backward"), s.get("backward_args"))
            for s in captured if s.get("forward_args") is not None]


def forward_node_of(node: torch.fx.Node, forward: torch.fx.GraphModule) -> torch.fx.Node | None:
    """The forward node a backward node differentiates: the one AOTAutograd gave the same ``seq_nr``
    (the autograd sequence number it keeps on both sides of a joint graph); None for a node that
    belongs to no forward op (a gradient accumulation, a tangent's reshape)."""
    seq = node.meta.get("seq_nr")
    if seq is None or node.meta.get("is_gradient_acc", False):
        return None
    for n in forward.graph.nodes:
        if n.op == "call_function" and n.meta.get("seq_nr") == seq:
            return n
    return None
