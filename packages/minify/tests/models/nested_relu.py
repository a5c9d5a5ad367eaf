"""A torch.nested jagged tensor in and out (three sequences of 2, 5 and 1 rows) through a two-layer MLP:
with the planted relu bug (Inductor's, or PyTorch's Dynamo-level test backends, which look for
torch.relu), the compiled model is wrong."""

import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.up, self.down = nn.Linear(6, 16), nn.Linear(16, 4)

    def forward(self, x):
        return self.down(torch.relu(self.up(x)))


torch.manual_seed(0)
model = MLP()
example_inputs = (torch.nested.nested_tensor([torch.randn(n, 6) for n in (2, 5, 1)], layout=torch.jagged),)
