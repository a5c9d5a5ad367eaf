"""InstanceNorm2d -> RReLU(eval) -> flatten -> exp(clamp) -> BatchNorm1d: Inductor asserts "unexpected group" in the C++ backend

issue: https://github.com/pytorch/pytorch/issues/183370
fix: not identified (issue closed; fails on 2.11.0, passes on 2.13.0)
class: crash,lowering
issue57: -
stage: inductor
op: aten._native_batch_norm_legit_no_training
file: torch/_inductor/codegen/cpp.py
changed: not identified
"""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.in2d = nn.InstanceNorm2d(7)
        self.rrelu = nn.RReLU()
        self.bn1 = nn.BatchNorm1d(63)

    def forward(self, x):
        t = self.in2d(x)
        t = self.rrelu(t)
        t = torch.flatten(t, start_dim=1)
        t = torch.exp(torch.clamp(t, max=10))
        return self.bn1(t)


torch.manual_seed(31)
model = Model().eval()
x = torch.randn(8, 7, 3, 3)
ret_eager = model(x.clone())
compiled = torch.compile(model)
ret_compiled = compiled(x.clone())
torch.testing.assert_close(ret_compiled, ret_eager)
