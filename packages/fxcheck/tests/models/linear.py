import torch

model = torch.nn.Linear(16, 32)
example_inputs = (torch.randn(16, 16),)


def batch10():
    return torch.nn.Linear(16, 32), (torch.randn(10, 16),)
