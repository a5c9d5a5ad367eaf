"""A forward that returns, beside what it computes, memory it never wrote: torch.empty_like and a view of
torch.empty. Their values are whatever the allocator hands back, so eager and a correct compile differ
there: Inductor's wrapper hands empty_like the buffer the matmul wrote and freed (``# reuse``), eager a
fresh one. A tensor made by torch.empty and then filled whole is defined and compared as any output."""

import torch

torch.manual_seed(0)


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(64, 64))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y = x @ self.w
        return y.sum(), torch.empty_like(y), torch.empty(3, 5)[:, 1:], torch.empty(5).fill_(2.0)


model = Model()
example_inputs = (torch.randn(64, 64),)
