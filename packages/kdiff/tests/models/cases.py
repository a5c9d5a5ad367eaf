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


class _Layer:
    def __init__(self, k, v):
        self.keys, self.values, self.dtype = k, v, k.dtype


class _Cache:
    """Shaped like transformers' DynamicCache: a class pytree does not know, its tensors two attributes down."""

    def __init__(self, layers):
        self.layers = layers


class _WithCache(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.k = torch.nn.Linear(8, 8)
        self.v = torch.nn.Linear(8, 8)

    def forward(self, x):
        return {"logits": torch.relu(self.k(x)).sum(-1), "past_key_values": _Cache([_Layer(self.k(x), self.v(x))])}


def with_cache():
    torch.manual_seed(0)
    return _WithCache(), (torch.randn(2, 3, 8),)


class _Casts(torch.nn.Module):
    """What HF models do around a norm or softmax: compute in float32, whatever the model's dtype."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(8, 8)
        self.b = torch.nn.Linear(8, 8)

    def forward(self, x):
        h = torch.softmax(self.a(x).float(), -1).to(torch.float32)
        return self.b(h + torch.zeros(8, dtype=torch.float32))


def casts():
    torch.manual_seed(0)
    return _Casts(), (torch.randn(4, 8),)


def near_tie():
    """Top-1 over scores two of which are 1e-7 apart: which one wins is rounding's choice."""
    scores = torch.tensor([[1.0, 1.0 + 1e-7, 0.25], [0.5, 0.125, 0.75]])
    values = torch.tensor([[10.0, -10.0, 3.0], [1.0, 2.0, 3.0]])

    def f(s, v):
        idx = (s * 1.0).topk(1, dim=-1).indices
        return torch.gather(v, -1, idx)

    return f, (scores, values)


def nudge_inputs(gm, example_inputs):
    """A backend whose rounding differs from eager's by a part in 1e6, up and down, before the graph runs."""
    def nudge(a):
        w = torch.ones_like(a)
        w[..., 0::2] += 1e-6
        w[..., 1::2] -= 1e-6
        return a * w

    def run(*args):
        return gm(*[nudge(a) if isinstance(a, torch.Tensor) and a.is_floating_point() and i == 0 else a
                    for i, a in enumerate(args)])
    return run


def uninitialised():
    """An empty_like buffer written before use: its value in the graph is garbage on both sides."""
    def f(x):
        e = torch.empty_like(x)
        e.copy_(x * 2)
        return torch.relu(e - 1)

    return f, (torch.randn(8, 16),)


class _LogHead(torch.nn.Module):
    """A head that makes NaN itself: log(h + 0.5) wherever h < -0.5, eagerly and compiled alike."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        h = self.fc(x)
        return torch.log(h + 0.5)


def log_head():
    torch.manual_seed(0)
    return _LogHead(), (torch.randn(4, 8),)


def _masked(x):
    # PyTorch's test_accuracy_vs_strict_accuracy: log1p feeds only the mask of a where whose branches are
    # the same; the output is wrong from the relu alone
    b = torch.logical_not(torch.logical_not(torch.log1p(x) > 0))
    r = torch.relu(x)
    return torch.where(b, r, r)


def masked():
    torch.manual_seed(0)
    return _masked, (torch.randn(20),)


def plus_one_relu_log1p(gm, example_inputs):
    """A backend whose relu and log1p both add 1 (Inductor's inject_relu_bug/inject_log1p_bug "accuracy")."""
    for n in list(gm.graph.nodes):
        if n.op == "call_function" and n.target in (torch.relu, torch.log1p, torch.ops.aten.relu.default,
                                                    torch.ops.aten.log1p.default):
            with gm.graph.inserting_after(n):
                plus = gm.graph.call_function(torch.add, (n, 1.0))
            n.replace_all_uses_with(plus, delete_user_cb=lambda u, p=plus: u is not p)
    gm.recompile()
    return gm.forward
