"""Eager raises, the compiled side returns (tests/test_e2e_missing_error.py): torch.mv of a float16 matrix and
a float32 vector, which eager refuses ("addmv input tensors must have the same dtype"), and Inductor's addmv
decomposition promotes and computes on torch 2.13 (real, not planted: seen on 2.13.0+cpu; the sibling of
torch.bmm's pytorch#177629, fixed for 2.12 by a dtype check in bmm's meta function; pytorch#147108, whose
addmv check in PR #184140 is not in 2.13.0)."""
import torch


def f(m, v):
    return torch.mv(m, v)


m = torch.randn(4, 3, dtype=torch.float16)
v = torch.randn(3, dtype=torch.float32)
try:
    f(m, v)
except RuntimeError as e:
    print(f"eager raises: {e}")
print(torch.compile(f)(m, v))
