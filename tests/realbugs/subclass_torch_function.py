"""a Tensor subclass whose __torch_function__ rescales results: compiled applies it twice

issue: https://github.com/pytorch/pytorch/issues/176686
fix: https://github.com/pytorch/pytorch/pull/177088
class: wrong-result,dynamo
issue57: 5
stage: dynamo
op: __torch_function__
file: torch/_dynamo/output_graph.py
changed: the compiled graph runs under DisableTorchFunctionSubclass when Dynamo inlined a subclass's __torch_function__, so it is not applied a second time at runtime
"""

import torch


class ScaledTensor(torch.Tensor):
    @staticmethod
    def __new__(cls, data, scale=2.0):
        obj = torch.Tensor._make_subclass(cls, data)
        obj.scale = scale
        return obj

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        raw = super().__torch_function__(func, types, args, kwargs)
        if isinstance(raw, torch.Tensor) and func in (torch.add, torch.mul, torch.sub, torch.div):
            return raw * 2.0  # custom side-effect
        return raw


a = ScaledTensor(torch.tensor([1.0, 2.0]))
b = ScaledTensor(torch.tensor([3.0, 4.0]))

eager = torch.mul(a, b)
torch._dynamo.reset()
compiled = torch.compile(torch.mul, backend="eager", fullgraph=False)(a, b)

print(f"eager   : {eager}")
print(f"compiled: {compiled}")
assert torch.allclose(eager, compiled), "mismatch"
