"""A training script as a user writes it: what `pt2kit capture -- python train_relu.py` captured as
tests/models/captured_relu.txt (its graph, with this file's lines above each statement)."""
import torch


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        h = self.fc(x)
        return torch.relu(h) * 2


net = torch.compile(Net())
for _ in range(3):
    net(torch.randn(4, 8)).sum().backward()
