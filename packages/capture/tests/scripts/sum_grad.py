"""A compiled function trained by its output's ``.sum().backward()``: autograd hands the graph's compiled
backward an expanded (stride 0) tensor of ones, not the mean a tool's own loss would give."""
import sys

import torch


def f(x):
    return (x * 2).sin()


x = torch.randn(3, 4, requires_grad=True)
torch.compile(f, backend="aot_eager")(x).sum().backward()
torch.save({"grad": x.grad}, sys.argv[1])
