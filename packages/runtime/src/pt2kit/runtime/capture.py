"""What a torch.compile backend is handed, captured from a real run: each aten forward graph Dynamo
compiles (through AOTAutograd) with the real arguments of its first call, and optionally Dynamo's graph.

Shared by kdiff (localisation) and minify (the graph it cuts). Guarantees: the model runs under
``torch.no_grad`` with Dynamo reset before and after, so no compiled code of this capture stays
behind; arguments are copies, safe to run again. Not guaranteed: backward graphs (not captured), a
graph whose first call never happens (left out), symbolic sizes without a hint (kept symbolic).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .torchapi import aot_autograd, reset_dynamo


def concrete(a: Any) -> Any:
    """A Dynamo graph's example argument as a value it runs on outside Dynamo: a tensor copied, a
    symbolic size (a dynamic-shape graph's SymInt) as the int it stands for in this call. Private
    torch API (``SymInt.node.hint``), kept here alone."""
    if isinstance(a, torch.Tensor):
        return a.detach().clone()
    if isinstance(a, torch.SymInt):
        hint = getattr(getattr(a, "node", None), "hint", None)
        try:
            return int(hint) if hint is not None else a
        except (AttributeError, TypeError, RuntimeError):  # a nested int (an NJT's ragged size): no int
            return a
    return a


def capture_forward(model: Any, call: Callable[[Any], Any], dynamo: list[Any] | None = None
                    ) -> list[tuple[torch.fx.GraphModule, list[Any]]]:
    """(aten forward graph, the real arguments of its first call) for each graph Dynamo compiles.

    ``dynamo``, when given, also receives (Dynamo's graph, its real arguments) for each, before
    AOTAutograd traces it: what a torch.compile backend is handed, kept even where AOTAutograd fails."""
    from functorch.compile import make_boxed_func
    captured: list[dict[str, Any]] = []

    def fw(gm: torch.fx.GraphModule, _example: list[Any]) -> Any:
        slot: dict[str, Any] = {"gm": gm, "args": None}
        captured.append(slot)

        def run(*args: Any) -> Any:
            if slot["args"] is None:
                slot["args"] = [concrete(a) for a in args]
            return gm(*args)

        return make_boxed_func(run)

    aot = aot_autograd(fw_compiler=fw)

    def backend(gm: torch.fx.GraphModule, example: list[Any]) -> Any:
        if dynamo is not None:
            dynamo.append((gm, [concrete(a) for a in example]))
        return aot(gm, example)

    reset_dynamo()
    with torch.no_grad():
        call(torch.compile(model, backend=backend))
    reset_dynamo()
    return [(s["gm"], s["args"]) for s in captured if s["args"] is not None]
