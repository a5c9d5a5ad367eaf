import ctypes

import torch


def forward(x):
    y = x + 1
    ctypes.string_at(0)  # reads address 0: SIGSEGV
    return y


model = forward
example_inputs = (torch.randn(4),)
