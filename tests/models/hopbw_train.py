"""A while_loop compiled whole (fullgraph=True) and differentiated; Inductor compiles its backward with a
pass that rejects a backward while_loop (hopbw_pass.py, planted): the script fails in loss.backward()."""
import torch
from hopbw_pass import reject_while_loop_backward
from torch._higher_order_ops import while_loop

torch._inductor.config.post_grad_custom_post_pass = reject_while_loop_backward


def f(x, w):
    def cond(i, c):
        return i < 3

    def body(i, c):
        return i + 1, torch.tanh(c @ w)

    _, out = while_loop(cond, body, (torch.zeros((), dtype=torch.int64), x))
    return out


x = torch.randn(2, 4, requires_grad=True)
w = torch.randn(4, 4, requires_grad=True)
torch.compile(f, fullgraph=True)(x, w).sum().backward()
