"""A model whose one op has two outputs (``aten.max.dim``: values and indices), and a test-only backend
(AOTAutograd, no Inductor: cheap) with that op's decomposition planted wrong in its indices alone. The first
tensor that differs is the ``getitem`` taking the indices; the op that computed them is ``aten.max.dim``
(torch 2.11's Inductor CPU got these indices wrong for a transposed input: pytorch#178964)."""
import torch
from functorch.compile import make_boxed_func
from torch._dynamo.backends.common import aot_autograd

aten = torch.ops.aten


class Net(torch.nn.Module):
    def forward(self, a, b):
        return (a + b).max(dim=1)  # line 14


def _max_dim(self, dim, keepdim=False):
    return aten.amax(self, [dim], keepdim), aten.argmin(self, dim, keepdim)  # argmin for argmax: indices wrong


def _run_as_traced(gm, _example_inputs):
    return make_boxed_func(gm.forward)


wrong_indices = aot_autograd(fw_compiler=_run_as_traced, decompositions={aten.max.dim: _max_dim})

model = Net()
g = torch.Generator().manual_seed(0)
example_inputs = (torch.randn(8, 8, generator=g).t(), torch.randn(8, 8, generator=g))
