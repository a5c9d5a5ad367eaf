"""factory ops return stale float32 after torch.set_default_dtype(torch.float64): no guard on the default dtype

issue: https://github.com/pytorch/pytorch/issues/184405
fix: not identified (issue closed; fails on 2.11.0, passes on 2.13.0)
class: wrong-result,dynamo
issue57: 5
stage: dynamo
op: torch.get_default_dtype guard
file: torch/_dynamo/guards.py
changed: Dynamo guards on the default dtype when a factory op reads it, so the second call recompiles
"""

import torch


def test_factory_apis():
    return {
        "ones": torch.ones(2),
        "zeros": torch.zeros(2),
        "tensor": torch.tensor([1.0, 2.0]),
        "arange": torch.arange(2.0),
        "empty": torch.empty(2),
    }

compiled_test = torch.compile(test_factory_apis, backend="inductor")

torch.set_default_dtype(torch.float32)
_ = compiled_test()

torch.set_default_dtype(torch.float64)
eager_results = test_factory_apis()
compiled_results = compiled_test()

bad = []
for api in eager_results:
    print(api, eager_results[api].dtype, compiled_results[api].dtype)
    if eager_results[api].dtype != compiled_results[api].dtype:
        bad.append(api)
assert not bad, f"stale dtype for {bad}"
