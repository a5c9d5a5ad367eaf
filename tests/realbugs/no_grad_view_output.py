"""returning a view made under torch.no_grad() of a differentiable intermediate: AOTAutograd's trace raises

issue: https://github.com/pytorch/pytorch/issues/173926
fix: https://github.com/pytorch/pytorch/pull/175673
class: crash,backward
issue57: -
stage: aot
op: aten.view
file: torch/_functorch/_aot_autograd/collect_metadata_analysis.py
changed: an output view with requires_grad but no grad_fn (made under no_grad) no longer gets a tangent in the joint graph
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(10, 10)

    def forward(self, x):
        a = self.linear(x)
        with torch.no_grad():
            x = a.view(-1)
        loss = a.mean()
        return loss, x


model = Model()
model(torch.randn(10))[0].backward()
torch.compile(model)(torch.randn(10))
