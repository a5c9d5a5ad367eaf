"""integer floor_divide_ by zero: eager raises ZeroDivisionError, compiled C++ dies by SIGFPE

issue: https://github.com/pytorch/pytorch/issues/143649
fix: https://github.com/pytorch/pytorch/pull/186021
class: crash,signal
issue57: 4
stage: inductor
op: aten.floor_divide
file: torch/csrc/inductor/cpp_prefix.h
changed: CPU codegen routes integer floor/trunc division through floor_divide_integral, which flags a zero divisor and raises after the kernel
"""

import torch


@torch.compile
def div(input, value):
    return torch.Tensor.floor_divide_(input, value)

input = torch.tensor([2, 5])
value = torch.tensor([0])
try:
    div(input, value)
except RuntimeError as e:
    # eager raises RuntimeError("ZeroDivisionError"); so must compiled code
    assert "ZeroDivisionError" in str(e), e
    print("compiled raised like eager:", e)
else:
    raise AssertionError("compiled floor_divide_ by zero did not raise")
