"""No breaks, no size dependence: only automatic dynamic shapes' one recompile."""
import torch


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = torch.nn.LayerNorm(16)
        self.fc = torch.nn.Linear(16, 16)

    def forward(self, x, mask):
        return self.fc(self.norm(x)) * mask


model = Block()
example_inputs = {"x": torch.randn(4, 16), "mask": torch.ones(4, 16)}
