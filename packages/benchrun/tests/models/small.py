"""Small models for benchrun's tests: one that runs, one that crashes the process, one that hangs,
one with dropout (train mode), one that writes into its input, and backends that raise."""

import ctypes
import time

import torch
from torch import nn


def mlp():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 8))
    return m, (torch.randn(16, 32),)


def dropout_mlp():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(32, 64), nn.Dropout(0.3), nn.ReLU(), nn.Linear(64, 8))
    return m, (torch.randn(16, 32),)


class Segfault(nn.Module):
    def forward(self, x):
        ctypes.string_at(0)  # reads address 0: SIGSEGV
        return x


def segfault():
    return Segfault(), (torch.randn(4),)


class Hang(nn.Module):
    def forward(self, x):
        time.sleep(3600)
        return x


def hang():
    return Hang(), (torch.randn(4),)


def raising_backend(gm, example_inputs):
    raise RuntimeError("this backend cannot compile anything")


class Breaks(nn.Module):
    """Two graphs: the print in the middle is a graph break."""

    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(16, 16), nn.Linear(16, 16)

    def forward(self, x):
        x = torch.relu(self.a(x))
        print("between the two graphs")
        return torch.tanh(self.b(x))


def breaks():
    torch.manual_seed(0)
    return Breaks(), (torch.randn(4, 16),)


def _logged(x):
    print("in a helper")  # a break inside a function Dynamo inlines: it skips the helper's frame
    return x + 1


class HelperBreaks(nn.Module):
    """A print inside a helper called in a loop: Dynamo's graph_break counter counts a break that
    torch._dynamo.explain does not (explain: 1 graph, 0 breaks)."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)

    def forward(self, x):
        x = self.a(x)
        for _ in range(3):
            x = _logged(x).relu()
        return x


def helper_breaks():
    torch.manual_seed(0)
    return HelperBreaks(), (torch.randn(2, 4),)


def integers():
    """Integer outputs only: nothing to train."""
    return nn.Identity(), (torch.arange(4),)


class WritesInput(nn.Module):
    def forward(self, x):
        x.neg_()  # a write into the input: each run must start from the model file's values
        return x + 0


def writes_input():
    return WritesInput(), (torch.ones(4),)
