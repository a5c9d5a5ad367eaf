"""Real training models for minify's --mode train tests, each whose backward graph holds the op a planted
fault hits.

- ``sqrelu``: an MLP with the squared-ReLU activation (Primer, So et al. 2021) written as an autograd
  Function with its hand-written backward, ``grad * relu(x)``: the backward graph AOTAutograd makes
  holds ``aten.relu``, the forward none (it computes ``clamp_min(x, 0) ** 2 / 2``). Inductor's planted
  cpp relu bug then makes a wrong gradient, and the forward stays right.
- ``relu15``: the same with ``relu(x) ** 1.5`` (its backward ``grad * sqrt(relu(x))``): the planted bug
  (``relu(x)`` computed as ``x + 1``) takes a square root of a negative number: NaN in a gradient only.
  Its batch is marked dynamic.
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
