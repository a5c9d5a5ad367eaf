"""A model file whose top level sets Inductor's post_grad_custom_post_pass to a pass that orders a write into an
input ahead of the read before it (the copy_ that ends the graph moved above the bmm that reads the input): the
bmm reads the written values. Neither op fails alone; the failure needs both (test_minify_mutation.py)."""

import torch
import torch._inductor.config

aten = torch.ops.aten


def write_first(graph: torch.fx.Graph) -> None:
    """Move each copy_ into a graph input ahead of the first other node that reads the input, where its source
    is computed by then."""
    order = {n: i for i, n in enumerate(graph.nodes)}
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target is aten.copy_.default and node.args[0].op == "placeholder":
            dst, src = node.args[:2]
            first = min((u for u in dst.users if u is not node), key=order.__getitem__, default=None)
            if first is not None and order[src] < order[first]:
                first.prepend(node)


torch._inductor.config.post_grad_custom_post_pass = write_first


def read_then_write(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    out = torch.bmm(a, b)
    a.copy_(c)  # after the read: the bmm sees a as it came in
    return out


torch.manual_seed(0)
model = read_then_write
example_inputs = (torch.randn(2, 3, 4), torch.randn(2, 4, 5), torch.randn(2, 3, 4))
