"""A torch.nested jagged tensor in and out (three sequences of 2, 5 and 1 rows) through a two-layer MLP:
with the planted relu bug given on the command line, the dense graph Inductor compiles of it is wrong."""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4))
rows = [torch.randn(n, 6) for n in (2, 5, 1)]
example_inputs = (torch.nested.nested_tensor(rows, layout=torch.jagged),)
