"""A user's script: a small model, compiled, called once; what it gave is saved to compare with."""
import sys

import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 16)
        self.head = torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.head(torch.relu(self.fc(x)))


torch.manual_seed(0)
net = Net()
compiled = torch.compile(net, backend="eager")
x = torch.randn(2, 8)
out = compiled(x)
torch.save({"0/0": out}, sys.argv[1])
print(f"out {out.sum().item():.6f}")
