"""A forward that returns, beside what it computes, memory it never wrote: torch.empty_like and a view of
torch.empty. Their values are whatever the allocator hands back, so eager and a correct compile differ
there: Inductor's wrapper hands empty_like the buffer the matmul wrote and freed (``# reuse``), eager a
fresh one. A tensor made by torch.empty and then filled whole is defined and compared as any output.
And an op's random-number generator state: a custom op whose schema names its second output
``philox_offset`` (as cuDNN's attention does), an offset that advances with every call, as a generator's."""

import itertools

import torch

torch.manual_seed(0)
_calls = itertools.count()
if not hasattr(torch.ops.pt2kit_e2e, "draw"):
    torch.library.define("pt2kit_e2e::draw", "(Tensor x) -> (Tensor output, Tensor philox_offset)")

    @torch.library.impl("pt2kit_e2e::draw", "CPU")
    def _draw(x):
        return x * 2, torch.tensor(next(_calls))

    @torch.library.register_fake("pt2kit_e2e::draw")
    def _draw_fake(x):
        return torch.empty_like(x), x.new_empty((), dtype=torch.int64)


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(64, 64))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y = x @ self.w
        _, offset = torch.ops.pt2kit_e2e.draw(y)
        return y.sum(), torch.empty_like(y), torch.empty(3, 5)[:, 1:], torch.empty(5).fill_(2.0), offset


model = Model()
example_inputs = (torch.randn(64, 64),)
