"""Planted: Inductor's C++ relu bug (its codegen adds 1 to every relu); an inference script.

The culprit PyTorch's compiler_bisector names: backend inductor, subsystem lowerings (the relu's lowering).
The script reads TORCH_COMPILE_BACKEND only as PyTorch's bisector documents (its `run` mode sets it); left
unset, as pt2kit never sets it, the script compiles with Inductor. Exit 0 when the compiled model matches
eager, 1 when it does not.
"""

import os
import sys

import torch
import torch._inductor.config

torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "accuracy"
BACKEND = os.environ.get("TORCH_COMPILE_BACKEND", "inductor")


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


def main() -> int:
    torch.manual_seed(0)
    model = Net().eval()
    x = torch.randn(4, 16)
    with torch.no_grad():
        expected = model(x)
        got = torch.compile(model, backend=BACKEND)(x)
    ok = torch.allclose(got, expected, rtol=1e-4, atol=1e-4)
    print(f"relu_bug ({BACKEND}): {'match' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
