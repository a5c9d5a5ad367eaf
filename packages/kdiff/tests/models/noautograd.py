"""A torch.library.custom_op with a fake kernel and no autograd formula: eager runs, eager backward cannot."""
import torch


@torch.library.custom_op("pt2kit_kdiff_test::scale", mutates_args=())
def scale(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@scale.register_fake
def _(x):
    return torch.empty_like(x)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        return scale(self.fc(x))


torch.manual_seed(0)
model = Model()
example_inputs = (torch.randn(4, 8),)
