"""a @property setter/getter on a Python object inside a compiled function is bypassed

issue: https://github.com/pytorch/pytorch/issues/176599
fix: not identified (issue closed; fails on 2.11.0, passes on 2.13.0)
class: wrong-result,dynamo
issue57: 5
stage: dynamo
op: property setter
file: torch/_dynamo/variables/user_defined.py
changed: Dynamo calls the property's fset/fget when tracing attribute stores and loads on user-defined objects
"""

import torch


class Box:
    def __init__(self, v):
        self._v = v

    @property
    def value(self):
        return self._v + 1

    @value.setter
    def value(self, v):
        self._v = v * 2


def fn(x):
    b = Box(3)
    b.value = 5        # setter: _v becomes 10
    return x + b.value  # getter: 10 + 1 = 11


inp = torch.tensor([0.0])
eager = fn(inp)
compiled = torch.compile(fn, backend="eager")(inp)
assert torch.equal(eager, compiled), f"Expected {eager}, got {compiled}"
