"""An MLP whose batch of 10 is no multiple of a 16-wide tile, deep behind aligned layers."""

import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(32, 64)
        self.b = torch.nn.Linear(64, 64)
        self.c = torch.nn.Linear(64, 16)

    def forward(self, x):
        h = torch.nn.functional.gelu(self.a(x))
        h = torch.tanh(self.b(h)) + h
        y = self.c(h).softmax(-1)
        return y[:10] * 2.0


def make():
    torch.manual_seed(0)
    return Net(), (torch.randn(16, 32),)
