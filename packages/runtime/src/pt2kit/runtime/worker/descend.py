"""Into a higher-order op: which of its subgraphs ran, on which real arguments.

Localisation compares a higher-order op (torch.cond, while_loop, invoke_subgraph, a checkpointed
region) as one node, through the outputs its ``getitem`` nodes take. Where they are the first to
diverge, every input of the op agreed, so the cause lies inside: the subgraph that ran is then
localised as a graph of its own, on the arguments it ran on (a cond's taken branch on its operands,
a loop body on the loop's first-iteration values). flex_attention's score and mask mods run on
single scores under vmap, which a standalone compile cannot reproduce: the op itself is named.

Guarantees: only subgraphs that ran are entered, each on the values the reference gave it.
"""

from __future__ import annotations

import operator
from typing import Any

import torch

from .hops import hop_name, is_hop


class _Reached(Exception):
    def __init__(self, args: tuple[Any, ...]) -> None:
        self.args_seen = args


def hop_of(gm: torch.fx.GraphModule, name: str) -> torch.fx.Node | None:
    """The higher-order op node ``name`` is (or whose output ``name`` takes), else None."""
    n = next((x for x in gm.graph.nodes if x.name == name), None)
    if n is not None and n.target is operator.getitem and isinstance(n.args[0], torch.fx.Node):
        n = n.args[0]
    return n if n is not None and is_hop(n.target) else None


def _args_at(gm: torch.fx.GraphModule, args: list[Any], hop: torch.fx.Node) -> tuple[Any, ...]:
    """The real arguments ``hop`` is called with when ``gm`` runs on ``args`` (subgraphs as modules)."""

    class Until(torch.fx.Interpreter):
        def run_node(self, n: torch.fx.Node) -> Any:
            if n is hop:
                raise _Reached(self.fetch_args_kwargs_from_env(n)[0])
            return super().run_node(n)

    try:
        with torch.no_grad():
            Until(gm).run(*args)
    except _Reached as r:
        return r.args_seen
    raise AssertionError(f"{hop.name} never ran")


def entered(gm: torch.fx.GraphModule, args: list[Any], hop: torch.fx.Node
            ) -> list[tuple[str, torch.fx.GraphModule, list[Any]]]:
    """(subgraph attribute, subgraph, its real arguments) for each subgraph of ``hop`` worth
    localising in, in the order they run."""
    name = hop_name(hop.target)
    if name == "flex_attention":
        return []
    real = _args_at(gm, args, hop)
    attrs = {id(v): str(a.target) for a, v in zip(hop.args, real, strict=False)
             if isinstance(a, torch.fx.Node) and a.op == "get_attr"}
    if name == "cond":
        pred, t, f, ops = real[:4]
        taken = t if bool(pred) else f
        return [(attrs[id(taken)], taken, list(ops))]
    if name == "while_loop":
        body, carried, extra = real[1], real[2], real[3]
        return [(attrs[id(body)], body, [*carried, *extra])]
    if name == "scan":  # combine_fn on the first slice of every scanned input
        fn, init, xs, extra = real[:4]
        return [(attrs[id(fn)], fn, [*init, *(x[0] for x in xs), *extra])]
    # invoke_subgraph(g, id, *ops), tag_activation_checkpoint(g, *ops), wrap(g, *ops): the first
    # subgraph runs on the tensors after it
    for i, v in enumerate(real):
        if isinstance(v, torch.fx.GraphModule) and id(v) in attrs:
            ops = [x for x in real[i + 1:] if isinstance(x, torch.Tensor | int | float)]
            return [(attrs[id(v)], v, ops)]
    return []
