"""No fault: a small training step that Inductor compiles right. PyTorch's compiler_bisector finds no
issue; pt2kit names no culprit. The script reads TORCH_COMPILE_BACKEND only as PyTorch's bisector documents
(its `run` mode sets it); left unset, it compiles with Inductor. Exit 0 when a compiled training step
matches eager's, 1 when it does not.
"""

import copy
import os
import sys

import torch

BACKEND = os.environ.get("TORCH_COMPILE_BACKEND", "inductor")


def main() -> int:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 1))
    twin = copy.deepcopy(model)
    x, y = torch.randn(8, 16), torch.randn(8, 1)
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    closs = torch.nn.functional.mse_loss(torch.compile(twin, backend=BACKEND)(x), y)
    closs.backward()
    ok = torch.allclose(closs, loss, rtol=1e-4, atol=1e-5) and all(
        torch.allclose(a.grad, b.grad, rtol=1e-4, atol=1e-5) for a, b in zip(twin.parameters(), model.parameters(), strict=True))
    print(f"healthy ({BACKEND}): {'match' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
