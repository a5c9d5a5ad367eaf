"""torch.cat(..., axis=1) crashes Inductor's pre-grad pass

issue: https://github.com/pytorch/pytorch/issues/171979
fix: https://github.com/pytorch/pytorch/pull/183995
class: crash
issue57: -
stage: inductor
op: sink_cat_after_pointwise
file: torch/_inductor/fx_passes/pre_grad.py
changed: pre-grad fusion normalizes NumPy-style kwargs and sink_cat_after_pointwise's cat_args accepts axis= (and out=)
"""

import torch
from torch import nn


class TestModel(nn.Module):
    def forward(self, x, t):
        X = torch.cat([x, t], axis=1)
        X = torch.relu(X)
        return X


input1 = torch.randn(16, 200)
input2 = torch.randn(16, 56)
model = TestModel()
want = model(input1, input2)
for backend in ("eager", "aot_eager", "inductor"):
    torch._dynamo.reset()
    got = torch.compile(model, backend=backend)(input1, input2)
    torch.testing.assert_close(got, want)
    print(f"succeed on {backend}")
