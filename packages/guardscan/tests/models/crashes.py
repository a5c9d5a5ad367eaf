"""Kills its process on the compiled path (and only there: eager runs fine)."""
import os
import signal

import torch


def forward(x):
    if torch.compiler.is_compiling():
        os.kill(os.getpid(), signal.SIGSEGV)
    return x + 1


model = forward
example_inputs = (torch.randn(4),)
