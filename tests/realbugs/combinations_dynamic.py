"""torch.combinations under dynamic=True: Dynamo's fake-tensor run raises "Cannot call numel() on tensor with symbolic sizes"

issue: https://github.com/pytorch/pytorch/issues/163759
fix: https://github.com/pytorch/pytorch/pull/172787
class: crash,dynamic,dynamo
issue57: 5
stage: dynamo
op: aten.combinations
file: aten/src/ATen/native/Itertools.cpp
changed: combinations takes the input's sym_size(0) and computes the output size symbolically instead of calling numel()
"""

import torch
import torch.nn as nn  # noqa: F401  (the issue's imports)
import torch.nn.functional as F  # noqa: F401
from torch._inductor import config

config.fallback_random = True
torch.set_grad_enabled(False)


class Model(torch.nn.Module):

    def __init__(self):
        super(Model, self).__init__()  # noqa: UP008

    def forward(self, x):
        x = torch.combinations(x.flatten(), r=2)
        return x


model = Model()


x = torch.randn(3, 1, 1)

inputs = [x]

device = "cpu"
def run_test(model, inputs, device, backend):
    torch.manual_seed(0)
    model.to(device)
    inputs = [input.to(device) for input in inputs]
    if backend != "eager":
        model = torch.compile(model, backend=backend, dynamic=True)
    output = model(*inputs)
    print(f"succeed on {backend}: {output}")
    return output


ref = run_test(model, inputs, device, 'eager')
out = run_test(model, inputs, device, 'aot_eager')
torch.testing.assert_close(out, ref)
