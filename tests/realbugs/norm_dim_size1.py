"""x.norm(dim=-1) on a size-1 last dimension: compiled output has the wrong shape

issue: https://github.com/pytorch/pytorch/issues/183121
fix: https://github.com/pytorch/pytorch/pull/182405
class: wrong-result
issue57: -
stage: aot
op: aten.linalg_vector_norm
file: torch/_refs/linalg/__init__.py
changed: vector_norm's size-1 fast path canonicalizes negative dims before dropping the reduced ones (fix of the twin issue #182181)
"""

import torch
import torch.nn as nn


class M(nn.Module):
    def forward(self, x):
        return x.norm(dim=-1)

m = M()
torch._dynamo.reset()
c = torch.compile(m)

x = torch.rand(5, 7, 1)

es = m(x).shape
cs = c(x).shape

print(f"eager   shape = {tuple(es)}")
print(f"compile shape = {tuple(cs)}")
assert es == cs, "BUG"
