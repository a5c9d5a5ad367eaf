"""An attention kernel that returns its random-generator state beside its output (as cuDNN's and the
memory-efficient SDPA kernels do: ``philox_seed``, ``philox_offset``, named so in the op's schema), then a
relu: with Inductor's planted relu bug the compiled model is wrong at the relu, never at the seed. The kernel
is a custom op with a CPU kernel (those SDPA kernels run on CUDA only); its offset advances with every call,
as a generator's does, so two runs of a correct compile differ there."""

import itertools

import torch
from torch import nn

_calls = itertools.count()
if not hasattr(torch.ops.pt2kit_rng, "attention"):
    torch.library.define("pt2kit_rng::attention",
                         "(Tensor q) -> (Tensor output, Tensor philox_seed, Tensor philox_offset)")

    @torch.library.impl("pt2kit_rng::attention", "CPU")
    def _attention(q):
        out = torch.softmax(q @ q.transpose(-2, -1) / q.shape[-1] ** 0.5, -1) @ q
        return out, torch.tensor(0), torch.tensor(next(_calls))

    @torch.library.register_fake("pt2kit_rng::attention")
    def _attention_fake(q):
        return torch.empty_like(q), q.new_empty((), dtype=torch.int64), q.new_empty((), dtype=torch.int64)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.up, self.down = nn.Linear(8, 16), nn.Linear(16, 8)

    def forward(self, x):
        a, seed, offset = torch.ops.pt2kit_rng.attention(x)
        return self.down(torch.relu(self.up(a))), seed, offset


torch.manual_seed(0)
model = Block()
example_inputs = (torch.randn(4, 8),)
