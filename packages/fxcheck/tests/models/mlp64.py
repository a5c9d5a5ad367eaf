import torch


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.fc2 = torch.nn.Linear(16, 4)

    def forward(self, x):
        h = torch.relu(self.fc1(x))  # line 11
        return self.fc2(h)  # line 12


model = MLP().double()
example_inputs = (torch.randn(16, 8, dtype=torch.float64),)
