import torch

model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU())
example_inputs = (torch.randn(2, 8),)
