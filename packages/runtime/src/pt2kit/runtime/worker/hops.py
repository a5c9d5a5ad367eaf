"""Higher-order ops (torch.cond, while_loop, scan, flex_attention, invoke_subgraph, checkpoint...) under
our own TorchDispatchModes, and in captured FX graphs. The private torch API it uses is behind pt2kit.runtime.shims.torchapi.

A TorchDispatchMode with no rule for a higher-order op makes torch raise NotImplementedError: a
model with ``torch.cond`` crashed kdiff's eager reference. :class:`HopAwareMode` takes the op and
runs it as eager does, with the mode popped, except that every callable argument (a branch, a loop
body, a score_mod, a checkpointed region) is wrapped to run with the mode pushed again: the ops
inside are seen one by one, wherever the op's own kernel calls them. An op with no callable
argument (auto_functionalized, a Triton kernel wrapper) runs whole, unseen inside; its name is kept
in ``blind``, for the tool to say so.

Guarantees: a higher-order op runs exactly as without the mode (same kernel, same arguments, the
callables doing the same work); the mode sees its outputs and, through the wrapped callables, every
op its subgraphs run.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch

from pt2kit_portable import hop_aware_mode

from ..shims.torchapi import generate_code, hop_name, is_hop

__all__ = ["HopAwareMode", "hop_name", "is_hop", "materialise", "subgraphs"]


# the class lives in pt2kit_portable, beside the float64 mode built on it (minify's repros carry both)
HopAwareMode = hop_aware_mode()


def subgraphs(gm: torch.fx.GraphModule, node: torch.fx.Node) -> Iterator[tuple[str, torch.fx.GraphModule]]:
    """(attribute name, graph) of each subgraph a higher-order op's node reads through ``get_attr``
    (a cond's ``true_graph_0``, a loop's ``body_graph_0``, flex_attention's ``score_mod_0``)."""
    seen: set[str] = set()

    def visit(a: Any) -> Iterator[tuple[str, torch.fx.GraphModule]]:
        if isinstance(a, tuple | list):
            for x in a:
                yield from visit(x)
        elif isinstance(a, dict):
            for x in a.values():
                yield from visit(x)
        elif isinstance(a, torch.fx.Node) and a.op == "get_attr" and a.target not in seen:
            sub = getattr(gm, str(a.target), None)
            if isinstance(sub, torch.fx.GraphModule):
                seen.add(str(a.target))
                yield str(a.target), sub

    yield from visit((node.args, node.kwargs))


def materialise(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """``gm`` with the Python code of it and every subgraph generated now. FX generates it lazily, on
    the first call, and Dynamo refuses to trace a lazy subgraph: torch.compile of a captured graph
    holding a cond failed with "Attempted to inline function marked as skipped"."""
    for m in gm.modules():
        if isinstance(m, torch.fx.GraphModule):
            generate_code(m)
    return gm
