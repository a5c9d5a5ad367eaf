"""A .item() in forward: two graphs and one break, at the line of the .item()."""
import torch


class Scaled(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        y = self.fc(x)
        scale = y.abs().max().item()
        return y / scale


model = Scaled()
example_inputs = (torch.randn(4, 8),)
