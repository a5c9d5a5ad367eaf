"""torch.linalg.cholesky on a non-positive-definite matrix raises in eager, returns NaNs compiled

issue: https://github.com/pytorch/pytorch/issues/182965
fix: not identified (issue closed; fails on 2.11.0, passes on 2.13.0)
class: wrong-result
issue57: -
stage: inductor
op: aten.linalg_cholesky_ex
file: torch/_inductor/decomposition.py
changed: compiled cholesky checks the factorization's info and raises torch.linalg.LinAlgError like eager
"""

import torch

A = torch.tensor([[1.0, 2.0], [2.0, 1.0]], dtype=torch.float32)

def fn(x):
    return torch.linalg.cholesky(x)

try:
    fn(A)
    eager = "ok"
except Exception as e:
    eager = type(e).__name__
    print("eager error:", eager, e)

try:
    y = torch.compile(fn, backend="inductor", fullgraph=True)(A)
    compiled = "ok"
    print("compiled ok:", y)
except Exception as e:
    compiled = type(e).__name__
    print("compiled error:", compiled, e)
assert eager == compiled, f"eager {eager}, compiled {compiled}"
