"""slice_scatter(x, y, dim=1).sum(dim=1) backward: compiled x.grad is zero (the stride-0 incoming gradient)

issue: https://github.com/pytorch/pytorch/issues/180164
fix: https://github.com/pytorch/pytorch/pull/180169
class: backward,layout
issue57: 1
stage: inductor
op: aten.slice_scatter
file: torch/_meta_registrations.py
changed: meta_slice_scatter returns a contiguous output instead of keeping self's zero strides
"""

import torch


# the first row: shape (4, 13, 33), slice [0:6] along dim 1, sum(dim=1)
def program(x, y):
    return torch.slice_scatter(x, y, dim=1, start=0, end=6).sum(dim=1)

torch.manual_seed(0)
x = torch.randn(4, 13, 33)
y = torch.randn(4, 6, 33)

xe = x.clone().requires_grad_(True)
ye = y.clone().requires_grad_(True)
program(xe, ye).sum().backward()

xc = x.clone().requires_grad_(True)
yc = y.clone().requires_grad_(True)
torch.compile(program, backend="inductor")(xc, yc).sum().backward()

print("eager.sum", float(xe.grad.sum()), "inductor.sum", float(xc.grad.sum()))
torch.testing.assert_close(xc.grad, xe.grad)
