"""A Dynamo wrong result still live on torch 2.13 (pytorch#196173, open; fix proposed in #196360): control
flow on `holder.current is holder.left` is folded to a constant while tracing, and only the attributes' types
are guarded, not their identity, so once the function flips `holder.current` the compiled code keeps taking
the first branch. No graph a backend is handed shows it (backend="eager": Dynamo alone), and with
torch.compile disabled the script runs through (packages/minify/tests/test_script_dynamo.py). The issue's own
code; its printed comparison made an assertion."""
import torch


class Holder:
    def __init__(self):
        self.left = object()
        self.right = object()
        self.current = self.left


def fn(x, holder):
    is_left = holder.current is holder.left
    holder.current = holder.right if is_left else holder.left

    if is_left:
        return x.square()
    return -x


def run(callable_fn):
    holder = Holder()
    x = torch.tensor([2.0, 3.0])

    outputs = []
    for i in range(6):
        print(f"Before {i}: current is left = {holder.current is holder.left}")
        result = callable_fn(x, holder)
        print(f"After  {i}: result={result}, current is left = {holder.current is holder.left}")
        outputs.append(result)
    return outputs


eager = run(fn)
compiled = run(torch.compile(fn, backend="eager"))
for i, (e, c) in enumerate(zip(eager, compiled, strict=True)):
    assert torch.equal(e, c), f"call {i}: eager {e.tolist()}, compiled {c.tolist()}"
