"""A nested jagged tensor in (two sequences of 3 and 5 rows) and one out: eager and torch.compile agree."""

import torch


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.lin(x)) * 2


torch.manual_seed(0)
model = M()
example_inputs = (torch.nested.nested_tensor([torch.randn(3, 8), torch.randn(5, 8)], layout=torch.jagged),)
