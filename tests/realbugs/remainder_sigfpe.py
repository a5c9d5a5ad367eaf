"""integer a % b with a zero divisor: eager raises, compiled C++ dies by SIGFPE

issue: https://github.com/pytorch/pytorch/issues/183610
fix: https://github.com/pytorch/pytorch/pull/179923
class: crash,signal
issue57: 4
stage: inductor
op: aten.remainder
file: torch/csrc/inductor/cpp_prefix.h
changed: integral remainder/fmod in the C++ prefix check for a zero divisor and raise ZeroDivisionError after the kernel
"""

import torch


def fn(a, b):
    return a % b

a = torch.tensor([15, -8, 22, 4])
b = torch.tensor([4, 0, 0, 1])

try:
    print("eager:", fn(a, b).tolist())
    eager = "ok"
except Exception as e:
    eager = type(e).__name__
    print("eager caught:", eager, e)

torch._dynamo.reset()
print("compile:", flush=True, end=" ")
try:
    c = torch.compile(fn, backend="inductor", fullgraph=True)(a, b)
    compiled = "ok"
    print(c.tolist())
except RuntimeError as e:
    compiled = type(e).__name__
    print("compiled caught:", compiled, e)
assert eager == compiled, f"eager {eager}, compiled {compiled}"
