"""A training script as a user writes it, with Inductor's relu accuracy bug planted in its own config:
what `pt2kit capture -- python train_relu.py | kdiff | minify` starts from (tests/test_e2e_captured.py)."""
import torch
import torch._inductor.config


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        h = self.fc(x)
        return torch.relu(h) * 2


torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = "accuracy"
net = torch.compile(Net())
for _ in range(2):
    net(torch.randn(4, 8)).sum().backward()
print("trained")
