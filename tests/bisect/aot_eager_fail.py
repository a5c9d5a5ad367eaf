"""Planted: a failure already present under aot_eager, before any Inductor stage: AOTAutograd's rng
functionalization (functorch's functionalize_rng_ops) asked for by the script, which AOTAutograd cannot
do without CUDA (it raises "CUDA not available" while tracing; on a GPU it draws Philox numbers, not
eager's); a training-style script with dropout.

The culprit PyTorch's compiler_bisector names: backend aot_eager, no subsystem. The script reads
TORCH_COMPILE_BACKEND only as PyTorch's bisector documents (its `run` mode sets it); left unset, it compiles
with Inductor. Exit 0 when the compiled model matches eager from the same seed, 1 when it does not or fails.
"""

import os
import sys

import torch
import torch._functorch.config

torch._functorch.config.functionalize_rng_ops = True
BACKEND = os.environ.get("TORCH_COMPILE_BACKEND", "inductor")


def head(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.dropout(x @ w, p=0.25, training=True).sum(-1)


def main() -> int:
    x, w = torch.randn(8, 16), torch.randn(16, 4, requires_grad=True)
    torch.manual_seed(0)
    expected = head(x, w)
    compiled = torch.compile(head, backend=BACKEND)
    torch.manual_seed(0)
    got = compiled(x, w)
    ok = torch.allclose(got, expected, rtol=1e-4, atol=1e-4)
    print(f"aot_eager_fail ({BACKEND}): {'match' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
