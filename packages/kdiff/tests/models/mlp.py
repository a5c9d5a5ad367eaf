import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 8)

    def forward(self, x):
        h = self.fc1(x)
        h = torch.relu(h)  # line 13
        return {"logits": self.fc2(h), "hidden": (h * 2, h.sum())}


model = Net()
example_inputs = (torch.randn(4, 16, generator=torch.Generator().manual_seed(1)),)
