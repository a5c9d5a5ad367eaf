"""A custom op with no C shim, so AOTI calls it through its proxy executor (a call the intermediate
value printer does not wrap); it fails at run time, after the fused kernel before it has finished."""

import torch


@torch.library.custom_op("pt2kit_test::boom", mutates_args=())
def boom(x: torch.Tensor) -> torch.Tensor:
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
