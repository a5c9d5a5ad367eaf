"""diagonal_scatter(...).sum().backward(): compiled x.grad is all zeros

issue: https://github.com/pytorch/pytorch/issues/183602
fix: https://github.com/pytorch/pytorch/pull/183720
class: backward,layout
issue57: 1
stage: inductor
op: aten.diagonal_scatter
file: torch/_meta_registrations.py
changed: diagonal_scatter's meta no longer keeps the stride-0 layout of the expanded incoming gradient (see also #182012)
"""

import torch


def fn(x, src):
    return torch.diagonal_scatter(x, src, 0).sum()

x1 = torch.zeros(5, 5, requires_grad=True)
s1 = torch.ones(5, requires_grad=True)
fn(x1, s1).backward()

torch._dynamo.reset()

x2 = torch.zeros(5, 5, requires_grad=True)
s2 = torch.ones(5, requires_grad=True)
torch.compile(fn)(x2, s2).backward()

print("eager x.grad sum:", float(x1.grad.sum()))
print("compile x.grad sum:", float(x2.grad.sum()))
torch.testing.assert_close(x2.grad, x1.grad)
