"""Sizes marked dynamic (batch and sequence): the captured graph carries symbolic sizes."""

import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(16, 32)

    def forward(self, x):
        b, t, _ = x.shape
        h = self.a(x).view(b * t, 32)
        h = torch.relu(h) * h.sum(-1, keepdim=True).sigmoid()
        return h.view(b, t, 32).mean(1)

def make():
    torch.manual_seed(0)
    x = torch.randn(4, 6, 16)
    torch._dynamo.mark_dynamic(x, 0)
    torch._dynamo.mark_dynamic(x, 1)
    return Net(), (x,)
