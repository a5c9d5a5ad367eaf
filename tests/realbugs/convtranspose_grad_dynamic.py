"""torch.func.grad over ConvTranspose2d under dynamic=True fails tracing the double backward

issue: https://github.com/pytorch/pytorch/issues/181175
fix: https://github.com/pytorch/pytorch/pull/184659
class: backward,dynamic
issue57: -
stage: aot
op: aten.convolution_backward
file: aten/src/ATen/native/Convolution.cpp
changed: _convolution_double_backward uses sym_numel() so AOTAutograd can trace it with symbolic sizes
"""

import torch
import torch.func as _torch_func
import torch.nn as nn

bn = nn.BatchNorm2d(5).eval()
convt = nn.ConvTranspose2d(5, 2, 3)
pool = nn.MaxPool2d(2)

torch.manual_seed(0)
x0 = torch.randn([3, 5, 14, 15])

def fn(x):
    x = bn(x)
    x = convt(x)
    x = pool(x)
    return torch.softmax(x, dim=0).mean()

want = _torch_func.grad(fn)(x0)
got = torch.compile(_torch_func.grad(fn), dynamic=True)(x0)
torch.testing.assert_close(got, want)
