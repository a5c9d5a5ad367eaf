"""Control flow on a size: recompiles when the size crosses the test."""
import torch


def forward(x):
    if x.shape[0] > 4:
        return x * 2
    return x + 1


def make():
    return forward, (torch.randn(6, 3),)


model, example_inputs = make()
