"""A user's script that branches on data with torch.cond inside a compiled function."""
import sys

import torch


def pos(x):
    return x.cos() + 1


def neg(x):
    return x.sin() - 1


@torch.compile(backend="eager")
def f(x):
    return torch.cond(x.sum() > 0, pos, neg, (x,)) * 3


torch.manual_seed(0)
out = f(torch.randn(4, 4))
torch.save({"0/0": out}, sys.argv[1])
