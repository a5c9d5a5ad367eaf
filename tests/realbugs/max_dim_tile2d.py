"""(a + b).max(dim=1) with a transposed: compiled CPU returns all-zero indices (the 2-D tiled kernel)

issue: https://github.com/pytorch/pytorch/issues/178964
fix: https://github.com/pytorch/pytorch/pull/179525
class: wrong-result
issue57: -
stage: inductor
op: aten.max.dim
file: torch/_inductor/codegen/cpp.py
changed: CppTile2DKernel's argmax/argmin index adds the offset inside the tile
"""

import torch


def fn(a, b):
    return (a + b).max(dim=1)

torch.manual_seed(0)
a = torch.randn(8, 8).transpose(0, 1)  # the shape should be (8, 8) to trigger the error
b = torch.randn(8, 8)

res1 = fn(a, b)
print(res1.indices)
res2 = torch.compile(fn, backend='inductor')(a, b)
print(res2.indices)
torch.testing.assert_close(res1, res2, equal_nan=True)
