"""A float16 model that fails only by assert_close: eager rounds ``x + 1024`` to float16 (a step of 1
there) before it subtracts, Inductor keeps the sum in float32 and gives ``x`` back. The compiled
output is the float64 one, eager's is not: PyTorch's float64 rule passes it, assert_close does not.
Deterministic (no randomness, every rounding is IEEE's), two ops, 64 elements."""

import torch


class Cancel(torch.nn.Module):
    def forward(self, x):
        return (x + 1024) - 1024


model = Cancel()
example_inputs = (torch.linspace(-3, 3, 64, dtype=torch.float16),)
