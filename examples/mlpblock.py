"""A Linear-GELU-Linear block with a transposed add: the model fxcheck ran on the GPU machine (--device cuda --inductor --backward)."""

import torch


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(64, 100)
        self.act = torch.nn.GELU()
        self.fc2 = torch.nn.Linear(100, 64)

    def forward(self, x):
        h = self.act(self.fc1(x))
        return self.fc2(h).softmax(-1) + x.t().sum(0)


torch.manual_seed(0)  # the same weights and inputs every run: the same page every run
model = Block()
example_inputs = (torch.randn(64, 64),)
