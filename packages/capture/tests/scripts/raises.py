"""A user's script that compiles, prints, then fails on bad data."""
import sys

import torch


@torch.compile(backend="eager")
def f(x):
    return x * 2 + 1


print("before", f(torch.ones(3)).tolist())
print("to stderr", file=sys.stderr)
raise ValueError("bad batch at step 3")
