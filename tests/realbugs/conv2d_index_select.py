"""conv2d followed by index_select on dim 2: Inductor's C++ transpose_mxn codegen uses an undeclared tmp variable (CppCompileError)

issue: https://github.com/pytorch/pytorch/issues/193581
fix: not identified (issue open; fails on 2.11.0, passes on 2.13.0)
class: crash,lowering
issue57: -
stage: inductor
op: aten.index_select
file: torch/_inductor/codegen/cpp.py
changed: not identified
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, a):
        v_conv = F.conv2d(a, torch.zeros(2, 2, 1, 6), stride=1, padding=2, dilation=1, groups=1)
        return torch.index_select(v_conv, 2, torch.tensor([3, 4, 6, 8]))


torch.manual_seed(42)
model = Model()
x = torch.rand(1, 2, 5, 6)
ret_eager = model(x.clone())
compiled = torch.compile(model)
with torch.no_grad():
    ret_compiled = compiled(x.clone())
torch.testing.assert_close(ret_compiled, ret_eager)
