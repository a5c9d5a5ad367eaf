"""ConvTranspose2d + GroupNorm + LayerNorm: the compiled CPU kernel corrupts the heap (SIGABRT)

issue: https://github.com/pytorch/pytorch/issues/181688
fix: not identified (issue closed; fails on 2.11.0, passes on 2.13.0)
class: crash,signal
issue57: 4
stage: inductor
op: aten.native_group_norm
file: torch/_inductor/codegen/cpp.py
changed: duplicate of #181618 (GroupNorm -> reduction fusion in the C++ backend wrote out of bounds); the CPP kernel's buffer sizing was fixed
"""

import torch
import torch.nn as nn

torch.manual_seed(0)
x = torch.randn([9, 8, 14, 11])

conv_t = nn.ConvTranspose2d(8, 6, 2)
gn     = nn.GroupNorm(6, 6).eval()
ln1    = nn.LayerNorm([12])
ln2    = nn.LayerNorm([12])

def model():
    t = torch.clamp(x, min=-2.0, max=2.0)
    t = conv_t(t)
    t = gn(t)
    t = ln1(t)
    t = ln2(t)
    return t

out = model()
assert torch.isfinite(out).all()

compiled = torch.compile(model, backend='inductor')
torch.testing.assert_close(compiled(), out)
