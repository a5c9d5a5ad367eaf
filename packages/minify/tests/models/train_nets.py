"""Real training models for minify's --mode train tests, each whose backward graph holds the op a planted
fault hits.

- ``sqrelu``: an MLP with the squared-ReLU activation (Primer, So et al. 2021) written as an autograd
  Function with its hand-written backward, ``grad * relu(x)``: the backward graph AOTAutograd makes
  holds ``aten.relu``, the forward none (it computes ``clamp_min(x, 0) ** 2 / 2``). Inductor's planted
  cpp relu bug then makes a wrong gradient, and the forward stays right.
- ``relu15``: the same with ``relu(x) ** 1.5`` (its backward ``grad * sqrt(relu(x))``): the planted bug
  (``relu(x)`` computed as ``x + 1``) takes a square root of a negative number: NaN in a gradient only.
  Its batch is marked dynamic.
- ``bnres``: a small ResNet (a stem conv, one basic block: conv, BatchNorm2d, ReLU, conv, BatchNorm2d,
  the skip added, ReLU; a linear head) in train mode, as torchvision's resnet18 is built: its BatchNorm
  buffers (running_mean, running_var) are graph inputs that must not require grad, and its backward
  holds ``aten.threshold_backward`` (kdiff's ``backward_bugs.py:relu_grad`` plants it wrong).
- ``bert``: a one-layer BERT from a transformers config (GELU, so its backward holds gelu_backward).
- ``gelu_backward_fails``: a torch.compile backend (AOTAutograd, then the graphs as they are) whose
  backward compiler raises when it is handed a graph holding ``aten.gelu_backward``.
"""

import torch
import torch.nn as nn


class SquaredReLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp_min(0) ** 2 / 2

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * torch.relu(x)


class ReLU15(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp_min(0) ** 1.5 * (2 / 3)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * torch.sqrt(torch.relu(x))


class MLP(nn.Module):
    def __init__(self, act):
        super().__init__()
        self.act = act
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x):
        h = self.act.apply(self.fc1(x))
        return torch.tanh(self.fc2(h))


def sqrelu():
    torch.manual_seed(0)
    return MLP(SquaredReLU), (torch.randn(4, 16),)


def relu15():
    torch.manual_seed(0)
    x = torch.randn(4, 16)
    torch._dynamo.mark_dynamic(x, 0)  # a dynamic batch: the graphs, and the repro, are dynamic
    return MLP(ReLU15), (x,)


class BasicBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)

    def forward(self, x):
        out = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(out)) + x)


class BNResNet(nn.Module):
    def __init__(self, c=8, classes=5):
        super().__init__()
        self.stem = nn.Conv2d(3, c, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(c)
        self.block = BasicBlock(c)
        self.fc = nn.Linear(c, classes)

    def forward(self, x):
        h = self.block(torch.relu(self.bn(self.stem(x))))
        return self.fc(h.mean((2, 3)))


def bnres():
    torch.manual_seed(0)
    return BNResNet(), (torch.randn(2, 3, 8, 8),)


def bert():
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(num_hidden_layers=1, hidden_size=32, intermediate_size=64, num_attention_heads=2,
                        vocab_size=100, max_position_embeddings=64)
    return BertModel(config), (torch.randint(0, 100, (2, 8)),)


def _as_is(gm, example_inputs):
    from functorch.compile import make_boxed_func

    return make_boxed_func(gm.forward)


def _backward(gm, example_inputs):
    if any("gelu_backward" in str(n.target) for n in gm.graph.nodes):
        raise NotImplementedError("this backend cannot compile aten.gelu_backward")
    return _as_is(gm, example_inputs)


def gelu_backward_fails(gm, example_inputs):
    from torch._dynamo.backends.common import aot_autograd

    return aot_autograd(fw_compiler=_as_is, bw_compiler=_backward)(gm, example_inputs)
