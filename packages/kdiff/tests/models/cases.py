"""Models and torch.compile backends for kdiff's tests."""

import torch


def _outputs_map(out, fn):
    if isinstance(out, (tuple, list)):
        return type(out)(fn(o) if i == 0 else o for i, o in enumerate(out))
    return fn(out)


def corrupt_one(gm, example_inputs):
    """A backend that runs the graph, then writes 42 into element [1, 2] of its first output."""
    def run(*args):
        def bad(t):
            t = t.clone()
            t[1, 2] = 42.0
            return t
        return _outputs_map(gm(*args), bad)
    return run


def add_1e9(gm, example_inputs):
    def run(*args):
        def bad(t):
            t = t.clone()
            t.view(-1)[3] += 1e-9
            return t
        return _outputs_map(gm(*args), bad)
    return run


def scale_1e6(gm, example_inputs):
    return lambda *args: _outputs_map(gm(*args), lambda t: t * (1 + 1e-6))


def small():
    return (lambda x: x * 3 + 1), (torch.arange(20, dtype=torch.float32).reshape(4, 5),)


def big_values():
    return (lambda x: x + 0), (torch.full((64,), 1000.0) + torch.arange(64.0),)


def float64():
    return (lambda x: x.sin()), (torch.linspace(0, 1, 8, dtype=torch.float64),)


def nans():
    return (lambda x: torch.log(x)), (torch.tensor([1.0, -1.0, 2.0, -3.0]),)
