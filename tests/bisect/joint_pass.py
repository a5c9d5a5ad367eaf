"""Planted: a joint_custom_post_pass that corrupts one node of the joint (forward + backward) graph (the
first multiplication by a constant gets twice the constant); a training script.

The culprit PyTorch's compiler_bisector names: backend inductor, subsystem joint_graph_passes, the
application of joint_custom_post_pass. The pass is code: `pt2kit capture` records where it lives
(joint_pass.py:corrupt) and a tool is handed it with `--config joint_custom_post_pass=joint_pass.py:corrupt`.
The script reads TORCH_COMPILE_BACKEND only as PyTorch's bisector documents (its `run` mode sets it); left
unset, it compiles with Inductor. Exit 0 when a compiled training step matches eager's, 1 when it does not.
"""

import copy
import os
import sys

import torch
import torch._inductor.config

aten = torch.ops.aten


def corrupt(graph: torch.fx.Graph) -> None:
    """Double the scalar of the graph's first multiplication by a constant."""
    for node in graph.nodes:
        if node.op == "call_function" and node.target is aten.mul.Tensor and isinstance(node.args[1], float):
            node.args = (node.args[0], node.args[1] * 2)
            return


torch._inductor.config.joint_custom_post_pass = corrupt
BACKEND = os.environ.get("TORCH_COMPILE_BACKEND", "inductor")


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.tanh(self.fc1(x)) * 0.5)


def step(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    return loss.detach(), [p.grad for p in model.parameters()]


def main() -> int:
    torch.manual_seed(0)
    model = Net()
    twin = copy.deepcopy(model)
    x, y = torch.randn(8, 16), torch.randn(8, 1)
    loss, grads = step(model, x, y)
    closs, cgrads = step(torch.compile(twin, backend=BACKEND), x, y)
    ok = torch.allclose(closs, loss, rtol=1e-4, atol=1e-5) and all(
        torch.allclose(c, g, rtol=1e-4, atol=1e-5) for c, g in zip(cgrads, grads, strict=True))
    print(f"joint_pass ({BACKEND}): {'match' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
