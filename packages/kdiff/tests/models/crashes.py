import torch


def forward(x):
    raise RuntimeError("the model blew up")


model = forward
example_inputs = (torch.ones(2),)
