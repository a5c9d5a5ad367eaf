"""F.cross_entropy with probability targets and a class weight fails in Dynamo under dynamic=True

issue: https://github.com/pytorch/pytorch/issues/181870
fix: https://github.com/pytorch/pytorch/pull/182004
class: dynamic,dynamo
issue57: 5
stage: dynamo
op: aten.cross_entropy_loss
file: aten/src/ATen/native/LossNLL.cpp
changed: cross_entropy_loss_prob_target uses sym_numel() for the weight, so fake-tensor propagation works with symbolic sizes
"""

import torch
import torch.nn.functional as F


def fn(x, target, weight):
    return F.cross_entropy(x, target, weight=weight, reduction="none")

x = torch.randn(3, 5)
target = torch.rand(3, 5).softmax(dim=1)
weight = torch.rand(5)

eager_out = fn(x, target, weight)
print("EAGER_OK", eager_out.shape)

compiled = torch.compile(fn, dynamic=True, backend="eager")
compiled_out = compiled(x, target, weight)
print("COMPILED_OK", compiled_out.shape)
torch.testing.assert_close(compiled_out, eager_out)
