"""A LoRA-style adapter over a frozen base: 6 of 10 parameters (the Linear bases, the LayerNorm) are frozen."""

import torch


class LoRALinear(torch.nn.Module):
    def __init__(self, n, r=2):
        super().__init__()
        self.base = torch.nn.Linear(n, n)
        self.a = torch.nn.Parameter(torch.randn(r, n) * 0.1)
        self.b = torch.nn.Parameter(torch.randn(n, r) * 0.1)

    def forward(self, x):
        return self.base(x) + x @ self.a.t() @ self.b.t()


class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.l2 = LoRALinear(8), LoRALinear(8)
        self.norm = torch.nn.LayerNorm(8)

    def forward(self, x):
        return self.l2(torch.relu(self.l1(self.norm(x))))


torch.manual_seed(0)
model = M()
for name, p in model.named_parameters():
    p.requires_grad_(name.endswith((".a", ".b")))
example_inputs = (torch.randn(4, 8),)
