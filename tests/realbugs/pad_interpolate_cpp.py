"""argmax, F.pad and bilinear F.interpolate on the CPU: Inductor's C++ kernel does not compile (CppCompileError)

issue: https://github.com/pytorch/pytorch/issues/181366
fix: not identified (issue closed as fixed in nightly; fails on 2.11.0, passes on 2.13.0)
class: crash,lowering
issue57: -
stage: inductor
op: aten.constant_pad_nd
file: torch/_inductor/codegen/cpp.py
changed: the vectorized C++ kernel of the pad's masked load no longer writes decltype(x)::blendv on a scalar float x ("'decltype' evaluates to 'float', which is not a class")
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, kernel_size=3)

    def forward(self, x):
        x = x.argmax(0)
        x = x.float().view(1, 1, 1, 1)
        x = F.pad(x, (0, 0, 0, 0, 0, 2))
        x = F.interpolate(x, size=(5, 5), mode='bilinear', align_corners=False)
        return self.conv(x)


model = Model()
x = torch.tensor([6])

ret_eager = model(x.clone())
print("Eager OK:", ret_eager.shape)   # OK: [1, 3, 3, 3]

compiled = torch.compile(model)
ret_compiled = compiled(x.clone())    # crash
