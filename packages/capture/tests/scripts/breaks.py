"""A user's script with a graph break (a print in the middle) and a second call with a new batch size."""
import sys

import torch

torch.manual_seed(0)
proj = torch.nn.Linear(8, 8)


def step(x):
    y = torch.tanh(proj(x))
    print("halfway")
    return (y * 2).sin()


f = torch.compile(step, backend="eager")
a = f(torch.randn(2, 8))
b = f(torch.randn(5, 8))
torch.save({"1/0": a, "1/1": b}, sys.argv[1])
