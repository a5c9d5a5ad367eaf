"""Small models for minify's tests: each line a user would recognise in a repro's comments."""

import os

import torch
import torch.nn as nn


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 16)
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, x, y):
        h = torch.tanh(self.fc(y))
        z = self.conv(x)
        return z.mean() + h.sum()


def conv():
    torch.manual_seed(0)
    return ConvNet(), (torch.randn(2, 3, 8, 8), torch.randn(4, 16))


class LogNet(nn.Module):
    def forward(self, x):
        a = x * 2 + 1
        b = torch.log(a)  # NaN where a < 0, eagerly too
        return torch.sigmoid(b) + a.mean()


def lognet():
    torch.manual_seed(0)
    return LogNet(), (torch.randn(4, 8),)


class Clean(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2


def clean():
    return Clean(), (torch.randn(4, 4),)


def aborting_backend(gm, example_inputs):
    """A torch.compile backend with a planted crash: it kills the process on any graph holding a sigmoid."""
    if any("sigmoid" in str(n.target) for n in gm.graph.nodes):
        os.abort()
    return gm.forward
