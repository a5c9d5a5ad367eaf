"""torch.matmul (4-D) with float16 @ float32 raises in eager, compiled code returns a result

issue: https://github.com/pytorch/pytorch/issues/177630
fix: https://github.com/pytorch/pytorch/pull/173459
class: wrong-result
issue57: -
stage: dynamo
op: aten.bmm
file: torch/_meta_registrations.py
changed: higher-rank matmul decomposes to aten.bmm, whose meta now checks both operands share a dtype (the same check as #177629; #177858 proposed it in the bmm lowering instead)
"""

import torch

a = torch.randn(2, 4, 8, 8, dtype=torch.float16)
b = torch.randn(2, 4, 8, 64, dtype=torch.float32)

try:
    torch.matmul(a, b)
    eager = "ok"
except RuntimeError as e:
    eager = "RuntimeError"
    print(f"eager: ERROR - {e}")

torch._dynamo.reset()
try:
    out = torch.compile(torch.matmul, backend="inductor", fullgraph=True)(a, b)
    compiled = "ok"
    print(f"compile: OK dtype={out.dtype}")
except RuntimeError as e:
    compiled = "RuntimeError"
    print(f"compile: ERROR - {str(e)[:200]}")
assert eager == compiled, f"eager {eager}, compiled {compiled}"
