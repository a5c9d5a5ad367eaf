"""x[[0, 0]] += x[[0, 0]]: compiled doubles the update (duplicate constant indices, in-place)

issue: https://github.com/pytorch/pytorch/issues/174074
fix: https://github.com/pytorch/pytorch/pull/174877
class: wrong-result,constant,inplace
issue57: 2,3
stage: inductor
op: aten.index_put_
file: torch/_inductor/lowering.py
changed: index_put realizes its values into a buffer before the write, so the read is not fused with the in-place store
"""

import torch
from torch.nn import Module


class Model(Module):
    def forward(self, x):
        x[[0,0]] += x[[0,0]]
        return x

model = Model().double().eval()
compiled_model = torch.compile(model)

input_uncompiled = torch.tensor([[-0.8716,  0.1114]], dtype=torch.float64)
input_compiled = torch.tensor([[-0.8716,  0.1114]], dtype=torch.float64)

output_uncompiled = model(input_uncompiled)
output_compiled = compiled_model(input_compiled)
print("Uncompiled model output:\n", output_uncompiled)
print("Compiled model output:\n", output_compiled)
torch.testing.assert_close(output_uncompiled, output_compiled, equal_nan=True)
