"""Planted: a post_grad_custom_post_pass that corrupts one node (the bias add after the first matmul
becomes a subtraction); an inference script.

The culprit PyTorch's compiler_bisector names: backend inductor, subsystem post_grad_passes, the
application of post_grad_custom_post_pass. The pass is code: `pt2kit capture` records where it lives
(post_grad_pass.py:corrupt) and a tool is handed it with `--config post_grad_custom_post_pass=
post_grad_pass.py:corrupt`. The script reads TORCH_COMPILE_BACKEND only as PyTorch's bisector documents
(its `run` mode sets it); left unset, it compiles with Inductor. Exit 0 when the compiled model matches
eager, 1 when it does not.
"""

import os
import sys

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
BACKEND = os.environ.get("TORCH_COMPILE_BACKEND", "inductor")


def scale_shift(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.tanh((x * w) + b)


def main() -> int:
    torch.manual_seed(0)
    x, w, b = torch.randn(8, 16), torch.randn(16), torch.randn(16)
    expected = scale_shift(x, w, b)
    got = torch.compile(scale_shift, backend=BACKEND)(x, w, b)
    ok = torch.allclose(got, expected, rtol=1e-4, atol=1e-4)
    print(f"post_grad_pass ({BACKEND}): {'match' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
