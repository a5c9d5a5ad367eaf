"""A layer's output handed to a compiled function: its input x is no leaf (the result of an op on a weight
that requires grad), which a backend may look at (torch's non_leaf_compile_error_TESTING_ONLY refuses it)."""
import torch


class M(torch.nn.Module):
    def forward(self, x, y):
        return torch.relu(x).sum(0) * y + 1


model = M()
w = torch.randn(8, 8, requires_grad=True)
example_inputs = (w * 2, torch.randn(8))
