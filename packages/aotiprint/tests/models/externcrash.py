"""A custom op with no C shim, so AOTI calls it through its proxy executor (a call the intermediate
value printer does not wrap); it fails at run time, after the fused kernel before it has finished.
It fails only where compiled code calls it: called from the model's own forward (the eager run) it
works, so the failure is the compiled run's (a crash, exit 3), not the model's own (exit 2)."""

import sys

import torch


@torch.library.custom_op("pt2kit_test::boom", mutates_args=())
def boom(x: torch.Tensor) -> torch.Tensor:
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is M.forward.__code__:  # eager: the model's forward called it
            return x.clone()
        frame = frame.f_back
    raise RuntimeError("boom: the custom op failed")


@boom.register_fake
def _(x):
    return torch.empty_like(x)


class M(torch.nn.Module):
    def forward(self, x):
        y = torch.relu(x) + 1
        return boom(y).sin() * 2


model = M()
example_inputs = (torch.randn(4, 8),)
