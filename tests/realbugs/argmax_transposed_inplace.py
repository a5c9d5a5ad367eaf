"""argmax over a transposed view of a tensor mutated in place: compiled CPU returns the physical index

issue: https://github.com/pytorch/pytorch/issues/183082
fix: https://github.com/pytorch/pytorch/pull/183655
class: wrong-result,inplace
issue57: -
stage: inductor
op: aten.argmax
file: torch/_inductor/codegen/cpp.py
changed: the C++ argmin/argmax reductions carry the logical (row-major) index instead of the loop's physical one
"""

import torch


def f(x):
    x = x.clone()
    x.sin_()
    return x.t().argmax()

x = torch.tensor([
    [-1.5256, -0.7502, -0.6540, -1.6095, -0.1002, -0.6092, -0.9798],
    [-1.6091, -0.7121,  0.3037, -0.7773, -0.2515, -0.2223,  1.6871],
    [ 0.2284,  0.4676, -0.6970, -1.1608,  0.6995,  0.1991,  0.8657],
    [ 0.2444, -0.6629,  0.8073,  1.1017, -0.1759, -2.2456, -1.4465],
    [ 0.0612, -0.6177, -0.7981, -0.1316, -0.7984,  0.3357,  0.2753],
])

eager = f(x)
compiled = torch.compile(f, backend="inductor")(x)

print("eager =", eager.item())
print("compiled =", compiled.item())
assert compiled.item() == eager.item(), f"eager {eager.item()}, compiled {compiled.item()}"
