"""Planted (GPU only): Inductor's Triton relu bug (its Triton codegen adds 1 to every relu); an inference
script on CUDA, what PyTorch's own test_bad_lowering plants.

The culprit PyTorch's compiler_bisector names: backend inductor, subsystem lowerings (the relu's lowering).
The script reads TORCH_COMPILE_BACKEND only as PyTorch's bisector documents (its `run` mode sets it); left
unset, it compiles with Inductor. Exit 0 when the compiled model matches eager, 1 when it does not; 2 with
no CUDA.
"""

import os
import sys

import torch
import torch._inductor.config

torch._inductor.config.triton.inject_relu_bug_TESTING_ONLY = "accuracy"
BACKEND = os.environ.get("TORCH_COMPILE_BACKEND", "inductor")


def shifted_relu(x: torch.Tensor) -> torch.Tensor:
    return ((x * -1) - 0.01).relu() * 3


def main() -> int:
    if not torch.cuda.is_available():
        print("triton_relu: needs CUDA", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    x = torch.rand(100, device="cuda")
    ok = torch.allclose(torch.compile(shifted_relu, backend=BACKEND)(x), shifted_relu(x))
    print(f"triton_relu ({BACKEND}): {'match' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
