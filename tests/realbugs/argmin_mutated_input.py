"""argmin over the transpose of an input mutated in place (tan_): compiled CPU returns the physical index

issue: https://github.com/pytorch/pytorch/issues/174073
fix: https://github.com/pytorch/pytorch/pull/183655
class: wrong-result,inplace
issue57: 3
stage: inductor
op: aten.argmin
file: torch/_inductor/codegen/cpp.py
changed: the C++ argmin/argmax reductions carry the logical (row-major) index instead of the loop's physical one
"""

import torch


def foo(x):
    x.tan_()
    x = x.t()
    return x.argmin()


torch.manual_seed(0)
x1 = torch.randn(4, 6)
x2 = x1.clone()
out1 = foo(x1)
cf = torch.compile(foo)
out2 = cf(x2)
torch.testing.assert_close(out1, out2)
