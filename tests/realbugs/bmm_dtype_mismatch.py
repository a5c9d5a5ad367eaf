"""torch.bmm with float16 @ float32 raises in eager, compiled code returns a float32 result

issue: https://github.com/pytorch/pytorch/issues/177629
fix: https://github.com/pytorch/pytorch/pull/173459
class: wrong-result
issue57: -
stage: dynamo
op: aten.bmm
file: torch/_meta_registrations.py
changed: common_meta_baddbmm_bmm checks batch1.dtype == batch2.dtype, so FakeTensor tracing raises as eager does (landed for 2.12, not in release/2.11)
"""

import torch

a = torch.randn(2, 8, 8, dtype=torch.float16)
b = torch.randn(2, 8, 64, dtype=torch.float32)

try:
    torch.bmm(a, b)
    eager = "ok"
except RuntimeError as e:
    eager = "RuntimeError"
    print(f"CPU eager: ERROR - {e}")

torch._dynamo.reset()

@torch.compile(backend="inductor", fullgraph=True)
def compiled_bmm(x, y):
    return torch.bmm(x, y)

try:
    out = compiled_bmm(a, b)
    compiled = "ok"
    print(f"CPU compile: OK dtype={out.dtype}")
except RuntimeError as e:
    compiled = "RuntimeError"
    print(f"CPU compile: ERROR - {str(e)[:200]}")
assert eager == compiled, f"eager {eager}, compiled {compiled}"
