"""slice_scatter(...).sum().backward(): compiled x.grad is zero outside the slice

issue: https://github.com/pytorch/pytorch/issues/180771
fix: https://github.com/pytorch/pytorch/pull/180166
class: backward,layout
issue57: 1
stage: inductor
op: aten.slice_scatter
file: torch/_meta_registrations.py
changed: slice_scatter's meta clones a base with internal overlap (the stride-0 incoming gradient) instead of preserving its strides
"""

import torch

x = torch.tensor([1., 2., 3., 4., 5.], requires_grad=True)
y = torch.tensor([10., 20.], requires_grad=True)

def f(x, y):
    return torch.slice_scatter(x, y, dim=0, start=0, end=2).sum()

f(x, y).backward()
print(f"Eager x.grad = {x.grad}")

x2 = x.detach().clone().requires_grad_(True)
y2 = y.detach().clone().requires_grad_(True)
torch._dynamo.reset()
fn = torch.compile(f, backend='inductor')
fn(x2, y2).backward()
print(f"Inductor x.grad = {x2.grad}")
torch.testing.assert_close(x2.grad, x.grad)
