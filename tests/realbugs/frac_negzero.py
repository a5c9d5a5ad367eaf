"""torch.frac(-0.0): compiled drops the sign of zero (1/frac gives +inf, eager -inf)

issue: https://github.com/pytorch/pytorch/issues/183606
fix: not identified (issue closed; fails on 2.11.0, passes on 2.13.0)
class: wrong-result
issue57: -
stage: inductor
op: aten.frac
file: torch/_refs/__init__.py
changed: frac's decomposition keeps the sign of zero (x - trunc(x) returned +0.0 for -0.0)
"""

import torch

x = torch.tensor([-0.0, -0.0, -0.0])

def fn(x):
    return 1.0 / torch.frac(x)

e2 = fn(x)
torch._dynamo.reset()
c2 = torch.compile(fn, backend="inductor")(x)

print("1/frac eager:", e2[0].item(), "compile:", c2[0].item())
torch.testing.assert_close(c2, e2)
