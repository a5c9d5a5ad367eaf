"""y.detach_() inside a compiled function: requires_grad of y differs from eager

issue: https://github.com/pytorch/pytorch/issues/176854
fix: https://github.com/pytorch/pytorch/pull/177875
class: wrong-result,dynamo
issue57: 5
stage: dynamo
op: aten.detach_
file: torch/_dynamo/variables/tensor.py
changed: a Dynamo handler for Tensor.detach_() refreshes the tensor variable's metadata (requires_grad, grad_fn) from the mutated fake tensor
"""

import torch


def fn(x):
    y = x * 2.0
    y.detach_()
    z = y + 1.0
    return z, y.requires_grad

x = torch.randn(4, requires_grad=True)
z_e, rg_e = fn(x)
z_c, rg_c = torch.compile(fn, backend="eager")(x)
assert rg_e == rg_c, f"requires_grad: {rg_e} vs {rg_c}"
assert torch.allclose(z_e, z_c)
