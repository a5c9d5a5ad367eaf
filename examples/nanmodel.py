"""A model that makes NaN on purpose (the log of a negative number): what aotiprint finds."""

import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        y = torch.relu(self.fc(x))
        z = torch.log(y - 0.5)  # planted: log of a negative number is NaN
        return z.sum(dim=1), y.to(torch.bfloat16) * 2, x.long() + 1


torch.manual_seed(0)
model = Net()
example_inputs = (torch.randn(4, 8),)
