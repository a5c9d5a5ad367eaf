"""Small models for minify's tests: each line a user would recognise in a repro's comments."""

import os

import torch
import torch.nn as nn
import torch.nn.functional as F


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


class PosNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        a = torch.nn.functional.softplus(self.fc(x)) + 1.0
        b = torch.log(a)  # a >= 1 here: no NaN eagerly
        return torch.tanh(b) * x.mean()


def posnet():
    torch.manual_seed(0)
    return PosNet(), (torch.rand(4, 8),)


def nan_backend(gm, example_inputs):
    """A torch.compile backend with a planted NaN: its log reads its input minus 100."""
    for n in list(gm.graph.nodes):
        if n.op == "call_function" and n.target in (torch.log, torch.ops.aten.log.default):
            with gm.graph.inserting_before(n):
                shifted = gm.graph.call_function(torch.sub, (n.args[0], 100.0))
            n.args = (shifted, *n.args[1:])
    gm.recompile()
    return gm.forward


class Mlp(nn.Module):
    """Two Linears, a GELU and the relu: a few ops around it, for paths where every query is slow (AOT Inductor
    compiles and packages each one)."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(8, 16), nn.Linear(16, 8)

    def forward(self, x):
        return torch.relu(self.fc2(F.gelu(self.fc1(x)))) * 2


def mlp():
    torch.manual_seed(0)
    return Mlp(), (torch.randn(4, 8),)


class Half(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.fc(x)) * 2


def half():
    """A bfloat16 model: a bug that is not about the dtype gets a float32 repro."""
    torch.manual_seed(0)
    return Half().to(torch.bfloat16), (torch.randn(4, 8, dtype=torch.bfloat16),)


def no_bf16_backend(gm, example_inputs):
    """A torch.compile backend with a planted compile error on bfloat16 inputs only."""
    if any(getattr(x, "dtype", None) == torch.bfloat16 for x in example_inputs):
        raise NotImplementedError("bfloat16 is not supported by this backend")
    return gm.forward


class Raises(nn.Module):
    """A model with its own bug: its eager run raises, compiled or not."""

    def forward(self, x):
        h = torch.tanh(x)
        if True:
            raise RuntimeError("the model blew up")
        return h


def raises():
    return Raises(), (torch.randn(4),)


class Chaotic(nn.Module):
    """The logistic map at r = 3.9, 40 steps: float32 rounding alone leaves float64's orbit (issue 37)."""

    def forward(self, x):
        for _ in range(40):
            x = 3.9 * x * (1 - x)
        return x


def chaotic():
    torch.manual_seed(0)
    return Chaotic(), (torch.rand(256) * 0.8 + 0.1,)


def nudge_backend(gm, example_inputs):
    """A torch.compile backend that rounds differently: its inputs nudged by one part in a million, as a
    reordered reduction would, which a chaotic model turns into an output far from eager's."""

    def run(*args):
        return gm(*[a * (1 + 1e-6) if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args])

    return run


class DropoutNet(nn.Module):
    def forward(self, x):
        return F.dropout(x * 2, p=0.5, training=True) + 1  # a random op: each side must draw alike


def dropout():
    return DropoutNet(), (torch.randn(16, 16),)
