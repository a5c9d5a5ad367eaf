"""A model file whose top level sets Inductor's post_grad_custom_post_pass to a pass that corrupts one node (the
bias add becomes a subtraction), as a user's file that tries a pass does (test_file_code.py)."""

import torch
import torch._inductor.config

aten = torch.ops.aten


def corrupt(graph: torch.fx.Graph) -> None:
    """Turn the graph's first add into a subtraction."""
    for node in graph.nodes:
        if node.op == "call_function" and node.target is aten.add.Tensor:
            node.target = aten.sub.Tensor
            return


torch._inductor.config.post_grad_custom_post_pass = corrupt


def scale_shift(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.tanh((x * w) + b)


torch.manual_seed(0)
model = scale_shift
example_inputs = (torch.randn(8, 16), torch.randn(16), torch.randn(16))
