"""An integer divided by zero (tests/test_e2e_signal.py): eager raises RuntimeError ZeroDivisionError,
and on torch 2.13 Inductor's C++ kernel for ``torch.div(..., rounding_mode="trunc")`` of int64 tensors
divides without the check its floor division and remainder have, so the compiled process dies by SIGFPE
(real, not planted: seen on 2.13.0+cpu)."""
import torch


def f(x, y):
    return torch.div(x, y, rounding_mode="trunc")


x = torch.tensor([5, 7, 9], dtype=torch.int64)
y = torch.tensor([1, 0, 3], dtype=torch.int64)
try:
    f(x, y)
except RuntimeError as e:
    print(f"eager raises: {e}")
print(torch.compile(f)(x, y))
