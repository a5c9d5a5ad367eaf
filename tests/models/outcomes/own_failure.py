"""the model's own failure: its forward multiplies shapes that do not fit, eager or compiled."""
import torch


class Mismatch(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(5, 3))

    def forward(self, x):
        return torch.relu(x @ self.w)  # x is (4, 8): (4, 8) @ (5, 3) fails


torch.manual_seed(0)
model = Mismatch()
example_inputs = (torch.randn(4, 8),)
