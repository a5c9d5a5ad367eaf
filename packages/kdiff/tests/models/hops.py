"""Models whose forward holds a higher-order op: torch.cond, while_loop, flex_attention (CPU-sized).

Each is ``file.py:name``; ``name()`` returns (model, inputs). The cond model's true branch holds the
relu Inductor's planted bug (``cpp/triton.inject_relu_bug_TESTING_ONLY=accuracy``) breaks; its inputs
make the predicate true, so the branch runs.
"""

import torch


class _Cond(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(8, 8)
        self.b = torch.nn.Linear(8, 8)
        self.out = torch.nn.Linear(8, 4)

    def forward(self, x):
        h = torch.cond(x.sum() > 0, lambda t: self.a(t).relu(), lambda t: self.b(t).tanh(), (x,))
        return self.out(h)


def cond():
    torch.manual_seed(0)
    x = torch.randn(4, 8).abs() + 0.1  # sum > 0: the true branch (the relu) runs
    return _Cond(), (x,)


class _While(torch.nn.Module):
    """A 5-step fixed-point loop from h = 0: h <- tanh(W h + x), the step count carried in the loop."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Linear(8, 8)

    def forward(self, x):
        from torch._higher_order_ops.while_loop import while_loop

        def keep_going(i, h):
            return i < 5

        def step(i, h):
            return i + 1, torch.tanh(self.w(h) + x)

        _, h = while_loop(keep_going, step, (torch.zeros((), dtype=torch.int64, device=x.device), torch.zeros_like(x)))
        return h * 2


def while_loop():
    torch.manual_seed(0)
    return _While(), (torch.randn(4, 8),)


class _Flex(torch.nn.Module):
    """Causal attention through flex_attention: a block mask and a score_mod (a relative bias)."""

    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(16, 48)

    def forward(self, x):
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention

        b, s, _ = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, 1, 16).permute(2, 0, 3, 1, 4)

        def causal(b_, h_, q_idx, kv_idx):
            return q_idx >= kv_idx

        def bias(score, b_, h_, q_idx, kv_idx):
            return score - (q_idx - kv_idx).abs() * 0.1

        mask = create_block_mask(causal, None, None, s, s, device=x.device)
        return flex_attention(q, k, v, score_mod=bias, block_mask=mask)


def flex():
    torch.manual_seed(0)
    return _Flex(), (torch.randn(2, 128, 16),)


@torch.library.custom_op("pt2kit_tests::scale_", mutates_args=("x",))
def _scale_(x: torch.Tensor, by: float) -> None:
    x.mul_(by)


@_scale_.register_fake
def _(x, by):
    return None


class _Mixed(torch.nn.Module):
    """The other higher-order ops a captured graph holds: a mutating custom op (auto_functionalized),
    a checkpointed region (tag_activation_checkpoint), a compile region (invoke_subgraph)."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(8, 8)
        self.b = torch.nn.Linear(8, 8)

    def forward(self, x):
        from torch.utils.checkpoint import checkpoint

        h = self.a(x).clone()
        _scale_(h, 0.5)
        h = checkpoint(lambda t: torch.sigmoid(self.b(t)), h, use_reentrant=False)
        return _region(h) + _region(h * 2)


@torch.compiler.nested_compile_region
def _region(t):
    return torch.tanh(t) * 3


def mixed():
    torch.manual_seed(0)
    return _Mixed(), (torch.randn(4, 8),)
