"""while_loop: a 5-step fixed-point loop whose body holds tanh."""
import torch
from torch._higher_order_ops import while_loop


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Linear(16, 16)

    def forward(self, x):
        def cond(i, h):
            return i < 5

        def body(i, h):
            return i + 1, torch.tanh(self.w(h))

        _, h = while_loop(cond, body, (torch.tensor(0), x))
        return h


torch.manual_seed(0)
model = Model()
example_inputs = (torch.randn(8, 16),)
