import torch


def forward(x):
    y = x * 2
    z = y.double()  # line 6
    return z.sum()


model = forward
example_inputs = (torch.randn(16, 16),)
