"""A script that plants Inductor's relu accuracy bug through torch.compile(options=...), not its config
module: the record's settings lack it, its options carry it (tests/test_e2e_backend.py)."""
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.fc(x)) * 2


with torch.no_grad():
    step = torch.compile(Net(), options={"cpp.inject_relu_bug_TESTING_ONLY": "accuracy"})
    print(step(torch.randn(4, 8)).sum().item())
