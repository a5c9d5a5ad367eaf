"""A model file that sets its own Inductor config at module level, as users set freezing, coordinate
descent, cpp and triton options: here the planted relu bug. Nothing on the command line says so."""

import torch
import torch.nn as nn

torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "accuracy"


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.fc(x)) * 2


torch.manual_seed(0)
model = Net()
example_inputs = (torch.randn(4, 8),)
