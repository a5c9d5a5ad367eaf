"""The user's own bug, not the compiler's: the script expects the wrong value, and fails the same way with
torch.compile disabled (packages/minify/tests/test_script_dynamo.py: no repro, exit 2)."""
import torch


def fn(x):
    return x * 2.0


x = torch.tensor([4.0])
compiled = torch.compile(fn, backend="eager")(x)
assert compiled.item() == 9.0, f"expected 9, got {compiled.item()}"
