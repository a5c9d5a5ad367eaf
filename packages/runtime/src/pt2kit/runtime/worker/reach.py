"""Whether one node's wrong value reaches a graph's failing output: kdiff's localisation and minify's
accuracy search both name the first divergence that matters, not merely the first one.

A divergence can be masked away: ``y = log1p(x)`` feeding only the mask of ``where(b, x, x)`` (both
branches the same) changes no output, however wrong ``y`` is. PyTorch's minifier, in its default
accuracy mode, ignores such a divergence (it compares floating outputs only); its strict mode does not.
Here the question is asked directly: the graph is run eagerly with that one node yielding the compiled
value, everything else computed as eager computes it, and the caller judges the failing outputs'
values with its own verdict.

Guarantees: :func:`substituted` changes nothing but the one node's value; it runs the graph once,
without autograd, drawing random numbers from ``seed`` when given (as the reference run did).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch

__all__ = ["first_reaching", "substituted"]


def substituted(gm: torch.fx.GraphModule, args: list[Any], name: str, value: Any, wanted: Iterable[str], *,
                seed: int | None = None) -> dict[str, Any]:
    """The eager values of the ``wanted`` nodes of ``gm`` when node ``name`` yields ``value``."""
    want = set(wanted)
    got: dict[str, Any] = {}

    class Substituting(torch.fx.Interpreter):
        def run_node(self, n: torch.fx.Node) -> Any:
            out = value if n.name == name else super().run_node(n)
            if n.name in want:
                got[n.name] = out
            return out

    if seed is not None:
        torch.manual_seed(seed)
    with torch.no_grad():
        Substituting(gm).run(*args)
    return got


def first_reaching(gm: torch.fx.GraphModule, args: list[Any], diverged: list[tuple[str, Any]], failing: list[str],
                   fails: Callable[[str, Any], bool], *, seed: int | None = None) -> str | None:
    """Of the ``diverged`` nodes (name and compiled value, in graph order), the first whose value alone
    makes one of the ``failing`` outputs fail ``fails(output, value)``; None when none does (the outputs
    fail only from several divergences together, or none of them fails)."""
    for name, value in diverged:
        if name in failing:  # a failing output is its own path to a failing output
            return name
        try:
            outs = substituted(gm, args, name, value, failing, seed=seed)
        except Exception:  # eager cannot run on that value: it cannot be shown to matter
            continue
        if any(fails(o, v) for o, v in outs.items()):
            return name
    return None
