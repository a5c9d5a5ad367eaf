"""InstanceNorm2d, RReLU, flatten, exp and an eval BatchNorm1d on the CPU: Inductor's C++ kernel asserts "unexpected group"

issue: https://github.com/pytorch/pytorch/issues/181266
fix: not identified (issue closed; fails on 2.11.0, passes on 2.13.0)
class: crash
issue57: -
stage: inductor
op: aten._native_batch_norm_legit_no_training
file: torch/_inductor/codegen/cpp.py
changed: the C++ backend no longer puts the flattened pointwise nodes (group (12, 14, 10)) and the batch norm's (168, 10) in one kernel, where CppKernelProxy asserted their groups equal
"""

import torch
import torch.nn as nn

torch.manual_seed(0)

_m_t9637838 = nn.InstanceNorm2d(14)
_m_t9637840 = nn.RReLU().eval()
_m_t9637850 = nn.BatchNorm1d(140).eval()
t9637837 = torch.randn([12, 14, 2, 5])


def model():
    t9637838 = _m_t9637838(t9637837)
    t9637840 = _m_t9637840(t9637838)
    t9637847 = torch.flatten(t9637840, start_dim=1)
    t9637848 = torch.exp(torch.clamp(t9637847, max=20))
    t9637850 = _m_t9637850(t9637848)
    return t9637850


eager_out = model()
compiled = torch.compile(model, backend="inductor")
compiled_out = compiled()
assert torch.allclose(eager_out, compiled_out, atol=1e-4)
