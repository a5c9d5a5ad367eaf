"""Higher-order ops (torch.cond, while_loop, scan, flex_attention, invoke_subgraph, checkpoint...) under
our own TorchDispatchModes, and in captured FX graphs. The private torch API it uses is behind pt2kit.runtime.torchapi.

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

from .torchapi import dispatch_mode, generate_code, hop_name, is_hop, is_op_overload

__all__ = ["HopAwareMode", "hop_name", "is_hop", "materialise", "subgraphs"]


class HopAwareMode(dispatch_mode()):
    """A mode that also sees inside higher-order ops. Subclasses implement :meth:`watch` (an ordinary
    op: run it, look at it) in place of ``__torch_dispatch__``."""

    supports_higher_order_operators = True  # torch hands us higher-order ops instead of raising

    @classmethod
    def ignore_compile_internals(cls) -> bool:
        """Off while torch.compile traces, on again when what it compiled runs: eager flex_attention
        compiles itself (fullgraph), and Dynamo refuses to under a mode that says otherwise."""
        return True

    def __init__(self) -> None:
        super().__init__()
        self.blind: list[str] = []  # higher-order ops run whole, their insides unseen

    def watch(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return func(*args, **kwargs)

    def hop_out(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> Any:
        """The outputs of a higher-order op, for a subclass that looks at them too."""
        return out

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if not is_hop(func):
            return self.watch(func, tuple(args), kwargs)
        wrapped = [0]

        def inside(fn: Any) -> Any:
            wrapped[0] += 1

            def run(*a: Any, **kw: Any) -> Any:
                with self:
                    return fn(*a, **kw)

            return run

        args2 = tuple(_wrap_callables(a, inside) for a in args)
        kwargs2 = {k: _wrap_callables(v, inside) for k, v in kwargs.items()}
        if not wrapped[0] and (name := hop_name(func)) and name not in self.blind:
            self.blind.append(name)
        return self.hop_out(func, args2, kwargs2, func(*args2, **kwargs2))


def _wrap_callables(a: Any, inside: Any) -> Any:
    if isinstance(a, tuple | list):
        return type(a)(_wrap_callables(x, inside) for x in a)
    if callable(a) and not isinstance(a, torch.Tensor | type) and not is_hop(a) \
            and not is_op_overload(a):
        return inside(a)
    return a


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
