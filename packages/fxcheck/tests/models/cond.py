"""torch.cond: the true branch holds relu (line 13), the false branch tanh (line 16)."""
import torch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(16, 16)
        self.b = torch.nn.Linear(16, 16)

    def forward(self, x):
        def yes(t):
            return self.a(t).relu()

        def no(t):
            return self.b(t).tanh()

        return torch.cond(x.sum() > 0, yes, no, (x,))


torch.manual_seed(0)
model = Model()
example_inputs = (torch.randn(8, 16),)
