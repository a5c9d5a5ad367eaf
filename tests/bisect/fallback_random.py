"""Planted: a model whose output depends on random numbers (dropout), compiled without Inductor's
fallback_random, so the compiled model draws other numbers than eager from the same seed; an inference
script that keeps dropout on.

The culprit: Inductor's random numbers, which fallback_random=True replaces with eager's. On a GPU, PyTorch's
compiler_bisector names backend inductor, the config change (subsystem inductor_fallback_random), as its own
test_rng asserts; on the CPU Inductor's random decompositions (what fallback_random switches off) already
draw other numbers under aot_eager_decomp_partition (measured: eager and aot_eager match, it and inductor
do not), so the bisector stops there, at the decomposition subsystem. The script reads TORCH_COMPILE_BACKEND only as PyTorch's bisector
documents (its `run` mode sets it); left unset, it compiles with Inductor. Exit 0 when the compiled model
matches eager from the same seed, 1 when it does not.
"""

import os
import sys

import torch

BACKEND = os.environ.get("TORCH_COMPILE_BACKEND", "inductor")


def noisy(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.dropout(torch.relu(x), p=0.5, training=True) + torch.rand_like(x)


def main() -> int:
    x = torch.randn(64, 32)
    torch.manual_seed(0)
    expected = noisy(x)
    compiled = torch.compile(noisy, backend=BACKEND)
    torch.manual_seed(0)
    got = compiled(x)
    ok = torch.allclose(got, expected, rtol=1e-4, atol=1e-4)
    print(f"fallback_random ({BACKEND}): {'match' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
